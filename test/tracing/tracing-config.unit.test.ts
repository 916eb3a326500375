import { describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config/config.ts'
import { findUnknownSettings } from '../../src/config/unknown-settings.ts'
import { isFailure } from '../../src/shared/errors.ts'

const refusal = (env: Record<string, string>) => {
  try {
    loadConfig(env)
  } catch (error) {
    return isFailure(error, 'BAD_SETTING') ? error.message : `not a setting failure: ${String(error)}`
  }
  return 'accepted'
}

describe('the OTEL_* settings', () => {
  test('unset, or with OTEL_SDK_DISABLED=true, tracing is off', () => {
    expect(loadConfig({}).tracing).toBeUndefined()
    expect(loadConfig({ OTEL_SERVICE_NAME: 'plants' }).tracing).toBeUndefined()
    const disabled = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'TRUE' }
    expect(loadConfig(disabled).tracing).toBeUndefined()
  })

  test('the base endpoint gets v1/traces appended; the traces endpoint is taken as given and wins', () => {
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing).toEqual({
      url: 'http://collector:4318/v1/traces',
      serviceName: 'plant-store',
      resourceAttributes: {},
      sampler: 'parentbased_always_on',
      ratio: 1,
    })
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example/base/' }).tracing?.url).toBe(
      'https://otel.example/base/v1/traces',
    )
    const both = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/in',
      OTEL_SERVICE_NAME: 'plants-eu',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    }
    expect(loadConfig(both).tracing).toEqual({
      url: 'http://traces:9999/in',
      serviceName: 'plants-eu',
      resourceAttributes: {},
      sampler: 'parentbased_traceidratio',
      ratio: 0.25,
    })
  })

  test('a bad value stops the start with the variable named, even while tracing is off', () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }
    expect(refusal({ ...on, OTEL_TRACES_SAMPLER: 'sometimes' })).toStartWith(
      'OTEL_TRACES_SAMPLER must be one of',
    )
    expect(refusal({ OTEL_TRACES_SAMPLER_ARG: '1.5' })).toBe(
      'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "1.5"',
    )
    expect(refusal({ OTEL_SDK_DISABLED: 'yes' })).toBe(
      'OTEL_SDK_DISABLED must be one of true, false, got "yes"',
    )
    expect(refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toBe(
      'OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, got "collector:4318"',
    )
    expect(refusal({ ...on, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'grpc://c:4317' })).toBe(
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http:// or https:// URL, got "grpc://c:4317"',
    )
  })

  test("the exporter's own variables and the resource's are known; other OTEL_* ones are said to be ignored", () => {
    const warned = findUnknownSettings({
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer x',
      OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '5000',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod',
      OTEL_PROPAGATORS: 'b3',
      otel_service_name: 'plants',
    })
    expect(warned.map(({ name }) => name)).toEqual(['OTEL_PROPAGATORS', 'otel_service_name'])
    expect(warned[0]?.message).toStartWith('OTEL_PROPAGATORS is not a setting of this service and is ignored')
  })

  test('OTEL_RESOURCE_ATTRIBUTES: its pairs describe the service, values percent-decoded', () => {
    // given / when
    const tracing = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_RESOURCE_ATTRIBUTES: ' deployment.environment.name=prod , service.namespace=shop,team=a%20b%2Cc,',
    }).tracing
    // then
    expect(tracing?.resourceAttributes).toEqual({
      'deployment.environment.name': 'prod',
      'service.namespace': 'shop',
      team: 'a b,c',
    })
    expect(tracing?.serviceName).toBe('plant-store')
  })

  test('service.name: OTEL_SERVICE_NAME first, then OTEL_RESOURCE_ATTRIBUTES, then plant-store', () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }
    const named = (env: Record<string, string>) => loadConfig({ ...on, ...env }).tracing?.serviceName
    expect(named({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-resource' })).toBe('from-resource')
    expect(
      named({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-resource', OTEL_SERVICE_NAME: 'plants-eu' }),
    ).toBe('plants-eu')
    expect(named({})).toBe('plant-store')
    expect(
      loadConfig({ ...on, OTEL_RESOURCE_ATTRIBUTES: 'service.name=x,a=b' }).tracing?.resourceAttributes,
    ).toEqual({ a: 'b' })
  })

  test('a malformed OTEL_RESOURCE_ATTRIBUTES stops the start naming it, also while tracing is off', () => {
    for (const value of ['prod', '=prod', 'a=b,c', 'a=%zz'])
      expect(refusal({ OTEL_RESOURCE_ATTRIBUTES: value })).toStartWith(
        'OTEL_RESOURCE_ATTRIBUTES must be key=value pairs separated by commas',
      )
  })
})
