/**
 * Where plain data (parsed JSON or YAML) is nested deeper than `maxDepth` objects and arrays: the path of the first
 * container past the limit (`['a', 0, 'b']`), or undefined. The root container is at depth 1, scalars add none. The
 * walk keeps its own stack, so any depth is measured without a stack overflow (`JSON.parse` reads 200,000 nested
 * arrays; `structuredClone`, zod and every recursive walk after it overflow), and it stops at the limit, so a cyclic
 * value ends too.
 */
export function pathBeyondDepth(value: unknown, maxDepth: number): (string | number)[] | undefined {
  interface Entry {
    value: unknown
    depth: number
    key: string | number
    parent: Entry | undefined
  }
  const stack: Entry[] = [{ value, depth: 1, key: '', parent: undefined }]
  while (stack.length > 0) {
    const entry = stack.pop()!
    if (typeof entry.value !== 'object' || entry.value === null) continue
    if (entry.depth > maxDepth) {
      const path: (string | number)[] = []
      for (let at: Entry | undefined = entry; at?.parent !== undefined; at = at.parent) path.unshift(at.key)
      return path
    }
    if (Array.isArray(entry.value)) entry.value.forEach((item, index) => stack.push({ value: item, depth: entry.depth + 1, key: index, parent: entry }))
    else for (const [key, item] of Object.entries(entry.value)) stack.push({ value: item, depth: entry.depth + 1, key, parent: entry })
  }
  return undefined
}
