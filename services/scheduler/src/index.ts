export * from './scheduler.service.js';
