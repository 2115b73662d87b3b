export * from './config-store.service.js';
