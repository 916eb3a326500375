import { expect, test } from 'bun:test'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import ts from 'typescript'

const ROOT = new URL('../..', import.meta.url).pathname

// The types a file declares, at any depth: type aliases, interfaces, classes and enums.
export function typesDeclared(path: string, text: string): string[] {
  const names: string[] = []
  const visit = (node: ts.Node): void => {
    if (
      (ts.isTypeAliasDeclaration(node) ||
        ts.isInterfaceDeclaration(node) ||
        ts.isClassDeclaration(node) ||
        ts.isEnumDeclaration(node)) &&
      node.name
    )
      names.push(node.name.text)
    ts.forEachChild(node, visit)
  }
  visit(ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS))
  return names
}

// Each type name declared in more than one file, with the files: one name should mean one thing.
export function namesDeclaredTwice(files: { path: string; text: string }[]): Record<string, string[]> {
  const declaredIn = new Map<string, Set<string>>()
  for (const { path, text } of files)
    for (const name of typesDeclared(path, text))
      declaredIn.set(name, (declaredIn.get(name) ?? new Set()).add(path))
  return Object.fromEntries(
    [...declaredIn].filter(([, paths]) => paths.size > 1).map(([name, paths]) => [name, [...paths].sort()]),
  )
}

test('given the files of src/, then no type name is declared in two of them', async () => {
  const files: { path: string; text: string }[] = []
  for (const name of await readdir(join(ROOT, 'src'), { recursive: true }))
    if (name.endsWith('.ts'))
      files.push({ path: `src/${name}`, text: await readFile(join(ROOT, 'src', name), 'utf8') })
  expect(files.length).toBeGreaterThan(100)
  expect(namesDeclaredTwice(files)).toEqual({})
})

test('given two files that declare one name, then the name and both files are found; an import is no declaration', () => {
  const files = [
    { path: 'src/a.ts', text: 'export type Plant = { id: bigint }\ninterface Shown { at: Date }' },
    {
      path: 'src/b.ts',
      text: "import type { Plant } from './a.ts'\nexport function f() { type Shown = string }",
    },
    { path: 'src/c.ts', text: 'export class Plant {}\nexport enum Kind { A }' },
  ]
  expect(namesDeclaredTwice(files)).toEqual({
    Plant: ['src/a.ts', 'src/c.ts'],
    Shown: ['src/a.ts', 'src/b.ts'],
  })
})
