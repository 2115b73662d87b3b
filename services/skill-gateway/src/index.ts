export * from './skill-gateway.service.js';
export { SkillCaller, callPolicyOf, baseUrlOf, type CallPolicy, type SkillCall, type SkillCallResult } from './skill-caller.js';
export { CircuitBreaker, type CircuitStateName } from './circuit-breaker.js';
export { httpPost, skillPool, type HttpAnswer, type HttpPost } from './http-post.js';
export { SkillRegistry, checkRegistration } from './skill-registry.js';
