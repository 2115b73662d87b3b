import { type WorkflowTestResult } from './workflow-tests.js';

// characters XML 1.0 cannot hold at all (a skill's answer may carry them): dropped rather than escaped
// eslint-disable-next-line no-control-regex
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g;

/** Text or an attribute value as XML holds it. */
function xml(text: string): string {
  return text.replace(NOT_XML, '').replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&apos;');
}

const seconds = (ms: number): string => (ms / 1000).toFixed(3);

/**
 * The results as a JUnit XML report, as CI systems read it: one <testsuite> per test file (its classname the workflow),
 * one <testcase> per test, a <failure> with every difference for a failed test, an <error> for one that could not run.
 */
export function junitReport(results: readonly WorkflowTestResult[]): string {
  const files = [...new Set(results.map((result) => result.file))];
  const count = (list: readonly WorkflowTestResult[], outcome: WorkflowTestResult['outcome']): number =>
    list.filter((result) => result.outcome === outcome).length;
  const total = (list: readonly WorkflowTestResult[]): number => list.reduce((sum, result) => sum + result.ms, 0);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="loom workflow test" tests="${results.length}" failures="${count(results, 'failed')}" errors="${count(results, 'error')}" time="${seconds(total(results))}">`,
  ];
  for (const file of files) {
    const inFile = results.filter((result) => result.file === file);
    lines.push(
      `  <testsuite name="${xml(file)}" tests="${inFile.length}" failures="${count(inFile, 'failed')}" errors="${count(inFile, 'error')}" skipped="0" time="${seconds(total(inFile))}">`,
    );
    for (const result of inFile) {
      const open = `    <testcase name="${xml(result.name)}" classname="${xml(result.workflow)}" file="${xml(result.file)}" time="${seconds(result.ms)}"`;
      if (result.outcome === 'passed') {
        lines.push(`${open}/>`);
        continue;
      }
      const element = result.outcome === 'failed' ? 'failure' : 'error';
      const type = result.outcome === 'failed' ? 'mismatch' : 'dry-run';
      lines.push(
        `${open}>`,
        `      <${element} message="${xml(result.failures[0] ?? '')}" type="${type}">${xml(result.failures.join('\n'))}</${element}>`,
        '    </testcase>',
      );
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>', '');
  return lines.join('\n');
}
