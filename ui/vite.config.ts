// Builds the window's UI into ui/dist, which Tauri embeds into the app binary.
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

export default defineConfig({
  plugins: [react()],
  // Relative asset URLs work under Tauri's custom protocol.
  base: "./",
  clearScreen: false,
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // WebKitGTK in Debian 12 and later understands ES2022.
    target: "es2022",
    sourcemap: false,
  },
});
