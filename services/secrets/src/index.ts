export * from './secrets.service.js';
