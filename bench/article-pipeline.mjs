// The article pipeline the benchmarks run: source → transformer → filter (half the articles pass) → sink.
import { COMPONENT_KINDS, componentInstance as instance } from '@loom/domain';

/** The JavaScript scripts of the pipeline (upper-case the title, count the words; keep articles of more than 3 words). */
export const JAVASCRIPT_ARTICLE_SCRIPTS = {
  transform: 'return { ...body, title: String(body.title).toUpperCase(), words: String(body.text).split(" ").length };',
  filter: 'return body.words > 3;',
};

/**
 * The workflow `name`: `source` (default an inlet named `in`) → transformer → filter → a logger named `sink` (with
 * `sinkOptions`), the scripts in `language`.
 */
export function articleWorkflow(
  name,
  { source = instance(COMPONENT_KINDS.INLET, 'in'), scripts = JAVASCRIPT_ARTICLE_SCRIPTS, language = 'javascript', sinkOptions = {} } = {},
) {
  return {
    name,
    autoStart: false,
    components: [
      source,
      instance(COMPONENT_KINDS.MESSAGE_TRANSFORMER, 'transform', { script: scripts.transform, language }),
      instance(COMPONENT_KINDS.MESSAGE_FILTER, 'filter', { script: scripts.filter, language }),
      instance(COMPONENT_KINDS.LOGGER, 'sink', sinkOptions),
    ],
    links: [
      { from: source.name, to: 'transform' },
      { from: 'transform', to: 'filter' },
      { from: 'filter', to: 'sink' },
    ],
    resources: [],
    skills: [],
    workflowResources: [],
  };
}
