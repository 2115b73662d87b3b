export * from './skill-gateway.service.js';
