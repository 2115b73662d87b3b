export * from './executor.service.js';
export { componentFactories, isScriptComponent } from './components/registry.js';
export { type ComponentFactory, type LoomMessage, type Outcome, outcome, type Processor, type SignalSource, type Source } from './runtime/component.js';
export { type ComponentCounters, type RunEvent, type RunOptions, type RunState, WorkflowRun } from './runtime/workflow-run.js';
export { GraphStores, EMBEDDED_GRAPH_HOST } from './components/graph-stores.js';
