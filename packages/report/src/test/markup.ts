/** The first tag that is closed without being open (or left open), in a well-formed-ness check of the markup. */
export function unbalancedTag(markup: string): string | undefined {
  const open: string[] = []
  for (const [, closing, name, selfClosing] of markup.matchAll(/<(\/?)([a-zA-Z][\w:-]*)[^>]*?(\/?)>/g)) {
    if (selfClosing === '/') continue
    if (closing === '') open.push(name!)
    else if (open.pop() !== name) return name
  }
  return open[0]
}
