export * from './audit.service.js';
