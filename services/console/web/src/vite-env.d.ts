// Imports of style sheets, which Vite bundles into the build's CSS file.
declare module '*.css';
