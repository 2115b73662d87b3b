import { COMPONENT_KINDS, componentInstance, type WorkflowConfiguration } from '@loom/domain';
import { describe, expect, it } from 'vitest';
import { renderSvg } from './graphviz.js';
import { UsageError } from './usage-error.js';
import { workflowPicture } from './workflow-picture.js';

const UUID = '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';

/** inlet → enricher → logger, the enricher's failures to a second logger; one name has quotes and angle brackets. */
function workflow(): WorkflowConfiguration {
  return {
    name: `Prices_${UUID}`,
    autoStart: false,
    components: [
      componentInstance(COMPONENT_KINDS.INLET, `Orders_${UUID}`),
      componentInstance(COMPONENT_KINDS.HTTP_ENRICHER, 'Ask "shop" <v2>', { url: 'http://shop/{sku}', failure_handler: 'Failures' }),
      componentInstance(COMPONENT_KINDS.LOGGER, 'Log'),
      componentInstance(COMPONENT_KINDS.LOGGER, 'Failures'),
    ],
    links: [
      { from: `Orders_${UUID}`, to: 'Ask "shop" <v2>' },
      { from: 'Ask "shop" <v2>', to: 'Log' },
    ],
    resources: [],
    skills: [],
    workflowResources: [],
  };
}

describe('loom workflow show', () => {
  it('draws Mermaid: a box per component with its name (no uuid) and kind, arrows for links, dashed ones to the failure handler', () => {
    expect(workflowPicture(workflow(), 'mermaid')).toBe(
      [
        'flowchart LR',
        '  c0(["Orders<br/>Inlet"])',
        '  c1["Ask #quot;shop#quot; #lt;v2#gt;<br/>HTTP Enricher"]',
        '  c2[["Log<br/>Logger"]]',
        '  c3[["Failures<br/>Logger"]]',
        '  c0 --> c1',
        '  c1 --> c2',
        '  c1 -. failures .-> c3',
        '',
      ].join('\n'),
    );
  });

  it('draws Graphviz DOT with the same boxes and arrows, strings escaped', () => {
    expect(workflowPicture(workflow(), 'dot')).toBe(
      [
        'digraph "Prices" {',
        '  rankdir=LR;',
        '  node [fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=10];',
        '  c0 [label="Orders\\nInlet", shape=oval];',
        '  c1 [label="Ask \\"shop\\" <v2>\\nHTTP Enricher", shape=box];',
        '  c2 [label="Log\\nLogger", shape=box3d];',
        '  c3 [label="Failures\\nLogger", shape=box3d];',
        '  c0 -> c1;',
        '  c1 -> c2;',
        '  c1 -> c3 [style=dashed, label="failures"];',
        '}',
        '',
      ].join('\n'),
    );
  });

  it("with a run's counters, puts each component's messages in, out and failed in its box", () => {
    const counts = new Map([
      [`Orders_${UUID}`, { messagesIn: 0, messagesOut: 12, messagesFailed: 0 }],
      ['Ask "shop" <v2>', { messagesIn: 12, messagesOut: 11, messagesFailed: 1 }],
    ]);
    const lines = workflowPicture(workflow(), 'mermaid', counts).split('\n');
    expect(lines[1]).toBe('  c0(["Orders<br/>Inlet<br/>in 0 · out 12 · failed 0"])');
    expect(lines[2]).toBe('  c1["Ask #quot;shop#quot; #lt;v2#gt;<br/>HTTP Enricher<br/>in 12 · out 11 · failed 1"]');
    expect(lines[3]).toBe('  c2[["Log<br/>Logger"]]');
  });

  it('says to install Graphviz when its dot program is missing', async () => {
    const missing = renderSvg('digraph { a -> b }', 'loom-test-no-such-dot-program');
    await expect(missing).rejects.toBeInstanceOf(UsageError);
    await expect(missing).rejects.toThrow(/not installed.*install Graphviz \(Debian\/Ubuntu: apt-get install graphviz/);
  });
});
