-- wrk script for the plant store bench. Arguments after `--`:
--   mode ("create", "page" or "revalidate"), a file of bearer tokens (one a line), a base for
--   plant ids. Every request of a run carries a fresh id; owners rotate through the token file.
--   "revalidate" asks for the page with the owner's current ETag, the line of a fourth file
--   beside its token (304s).
local threads = {}
local counter = 0
local tokens = {}
local mode, base
local tags = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  mode = args[1]
  for line in io.lines(args[2]) do
    if #line > 0 then table.insert(tokens, line) end
  end
  base = tonumber(args[3]) + tid * 100000000
  if args[4] then
    for line in io.lines(args[4]) do
      if #line > 0 then table.insert(tags, line) end
    end
  end
end

function request()
  counter = counter + 1
  local token = tokens[(counter % #tokens) + 1]
  if mode == "page" then
    return wrk.format("GET", "/plants?limit=20", { ["Authorization"] = "Bearer " .. token })
  end
  if mode == "revalidate" then
    local tag = tags[(counter % #tokens) + 1]
    return wrk.format("GET", "/plants?limit=20", { ["Authorization"] = "Bearer " .. token, ["If-None-Match"] = tag })
  end
  local id = string.format("%.0f", base + counter)
  local body = '{"id":' .. id .. ',"name":"plant ' .. id .. '","tag":"bench"}'
  return wrk.format("POST", "/plants", {
    ["Authorization"] = "Bearer " .. token,
    ["Content-Type"] = "application/json",
  }, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"meanUs":%.1f,"errors":%d,"non2xx":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.mean,
    e.connect + e.read + e.write + e.timeout, e.status))
end
