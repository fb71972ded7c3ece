import { Template } from '@huggingface/jinja'
import type { TokenizerLimits } from '../tokenizer-limits.js'
import { findTemplateBounds, renderBounded } from './bounded-interpreter.js'
import { pythonStrip } from './python-string-methods.js'

const helperNames = { both: '__ludic_python_strip', left: '__ludic_python_lstrip', right: '__ludic_python_rstrip' } as const
const methodSides: Record<string, keyof typeof helperNames> = { strip: 'both', lstrip: 'left', rstrip: 'right' }

interface Node {
  type: string
  [field: string]: unknown
}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string'
}

/**
 * Rewrites, in a parsed template, the places where `@huggingface/jinja` departs from Python's Jinja
 * into calls to helpers that behave like Python:
 * - `x.strip(chars)`, `x.lstrip(chars)`, `x.rstrip(chars)`: the argument was ignored;
 * - `x | trim` and `x | trim(chars)`: JavaScript's `trim` white space differs from Python's.
 * Nodes are rewritten in place (the interpreter dispatches on `type`), reusing the parser's
 * `Identifier` class for the helper names.
 */
function rewriteStringMethods(node: Node, makeIdentifier: (name: string) => Node): void {
  if (node.type === 'CallExpression') {
    const callee = node.callee
    if (isNode(callee) && callee.type === 'MemberExpression' && callee.computed === false && isNode(callee.property) && callee.property.type === 'Identifier') {
      const side = methodSides[callee.property.value as string]
      if (side !== undefined) {
        node.args = [callee.object, ...(node.args as unknown[])]
        node.callee = makeIdentifier(helperNames[side])
      }
    }
  } else if (node.type === 'FilterExpression') {
    const filter = node.filter
    const isTrim = (candidate: unknown): boolean => isNode(candidate) && candidate.type === 'Identifier' && candidate.value === 'trim'
    let extraArguments: unknown[] | undefined
    if (isTrim(filter)) extraArguments = []
    else if (isNode(filter) && filter.type === 'CallExpression' && isTrim(filter.callee)) extraArguments = filter.args as unknown[]
    if (extraArguments !== undefined) {
      const operand = node.operand
      delete node.operand
      delete node.filter
      node.type = 'CallExpression'
      node.callee = makeIdentifier(helperNames.both)
      node.args = [operand, ...extraArguments]
    }
  }
  for (const value of Object.values(node)) {
    if (Array.isArray(value)) {
      for (const item of value) if (isNode(item)) rewriteStringMethods(item, makeIdentifier)
    } else if (value instanceof Map) {
      for (const [key, item] of value) {
        if (isNode(key)) rewriteStringMethods(key, makeIdentifier)
        if (isNode(item)) rewriteStringMethods(item, makeIdentifier)
      }
    } else if (isNode(value)) rewriteStringMethods(value, makeIdentifier)
  }
}

/** Finds one `Identifier` node in the tree, to borrow its class. */
function findIdentifier(node: Node): Node | undefined {
  if (node.type === 'Identifier') return node
  for (const value of Object.values(node)) {
    const items = Array.isArray(value) ? value : value instanceof Map ? [...value.keys(), ...value.values()] : [value]
    for (const item of items) {
      if (!isNode(item)) continue
      const found = findIdentifier(item)
      if (found !== undefined) return found
    }
  }
  return undefined
}

/** A compiled chat template: renders with Python Jinja's behavior where `@huggingface/jinja` differs, within `limits`. */
export interface CompiledTemplate {
  render(context: Record<string, unknown>, limits: TokenizerLimits): string
}

/**
 * Compiles a Jinja template with `@huggingface/jinja` (trim_blocks and lstrip_blocks on, as
 * transformers), then fixes the differences from Python Jinja that chat templates meet (see
 * `rewriteStringMethods`). Like Python Jinja (`keep_trailing_newline=False`), one newline at the
 * very end of the template is dropped.
 */
export function compilePythonCompatibleTemplate(source: string): CompiledTemplate {
  const trimmed = source.endsWith('\r\n') ? source.slice(0, -2) : source.endsWith('\n') ? source.slice(0, -1) : source
  const template = new Template(trimmed)
  const program = template.parsed as unknown as Node
  const identifier = findIdentifier(program)
  if (identifier !== undefined) {
    const IdentifierClass = identifier.constructor as new (name: string) => Node
    rewriteStringMethods(program, (name) => new IdentifierClass(name))
  }
  const bounds = findTemplateBounds(program)
  return {
    render: (context, limits) =>
      renderBounded(
        template.parsed,
        bounds,
        {
          ...context,
          [helperNames.both]: (value: unknown, characters?: unknown) => pythonStrip(value, 'both', characters),
          [helperNames.left]: (value: unknown, characters?: unknown) => pythonStrip(value, 'left', characters),
          [helperNames.right]: (value: unknown, characters?: unknown) => pythonStrip(value, 'right', characters),
        },
        limits,
      ),
  }
}
