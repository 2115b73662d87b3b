export * from './executor.service.js';
export * from './executor-handlers.js';
export { componentFactories, isScriptComponent } from './components/registry.js';
export { type ComponentFactory, type LoomMessage, type Outcome, outcome, type Processor, type SignalSource, type Source } from './runtime/component.js';
export { type RunEvent, type RunState, WorkflowRun } from './runtime/workflow-run.js';
export { type RunOptions } from './runtime/options.js';
export { type ComponentCounters } from './runtime/run-graph.js';
export { ComponentError, type FailureRecord } from './runtime/component-error.js';
export { GraphStores, EMBEDDED_GRAPH_HOST } from './components/graph-stores.js';
