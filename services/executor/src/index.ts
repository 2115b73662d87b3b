export * from './executor.service.js';
