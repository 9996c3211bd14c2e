import { defineConfig } from "vite";

// The gateway serves dist/ on its web port; the page calls the same origin.
export default defineConfig({
  build: { outDir: "dist", emptyOutDir: true, chunkSizeWarningLimit: 2000 },
  server: { proxy: { "^/(mogames|grpc)\\.": "http://127.0.0.1:8080" } },
});
