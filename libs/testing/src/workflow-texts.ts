/**
 * The compact form of a three-component workflow the tests push: an inlet `In`, a JavaScript transformer `Check` that
 * runs `script` (the body of a function of `body`; one that throws fails the message), and a logger `Done`.
 */
export function checkedWorkflowText(name: string, script: string): string {
  return [
    `name: ${name}`,
    'components:',
    '  In: source.Inlet',
    '  Check:',
    '    kind: processor.MessageTransformer',
    '    options:',
    `      script: ${JSON.stringify(script)}`,
    '      language: javascript',
    '  Done: sink.Logger',
    'links:',
    '  - In -> Check -> Done',
    '',
  ].join('\n');
}
