type Frame = { kind: 'object'; keys: Set<string>; key: string } | { kind: 'array'; index: number }

/**
 * Finds the first key that appears twice in one object of a JSON text (`JSON.parse` silently keeps the
 * last). Returns the path to the repeated key (object keys and array indices from the root), or
 * `undefined`. `text` must already be valid JSON: this only scans its structure, in one pass, without
 * recursion (deep nesting cannot overflow the stack).
 */
export function findDuplicateJsonKey(text: string): (string | number)[] | undefined {
  const frames: Frame[] = []
  let expectKey = false
  let position = 0
  while (position < text.length) {
    const character = text.charCodeAt(position)
    if (character === 0x22 /* " */) {
      let end = position + 1
      let escaped = false
      while (text.charCodeAt(end) !== 0x22) {
        if (text.charCodeAt(end) === 0x5c /* \ */) {
          escaped = true
          end += 2
        } else end++
      }
      const top = frames[frames.length - 1]
      if (expectKey && top?.kind === 'object') {
        const key = escaped ? (JSON.parse(text.slice(position, end + 1)) as string) : text.slice(position + 1, end)
        if (top.keys.has(key)) return [...frames.slice(0, -1).map(pathPart), key]
        top.keys.add(key)
        top.key = key
        expectKey = false
      }
      position = end + 1
      continue
    }
    if (character === 0x7b /* { */) {
      frames.push({ kind: 'object', keys: new Set(), key: '' })
      expectKey = true
    } else if (character === 0x5b /* [ */) {
      frames.push({ kind: 'array', index: 0 })
    } else if (character === 0x7d /* } */ || character === 0x5d /* ] */) {
      frames.pop()
      expectKey = false
    } else if (character === 0x2c /* , */) {
      const top = frames[frames.length - 1]
      if (top?.kind === 'object') expectKey = true
      else if (top?.kind === 'array') top.index++
    }
    position++
  }
  return undefined
}

function pathPart(frame: Frame): string | number {
  return frame.kind === 'object' ? frame.key : frame.index
}
