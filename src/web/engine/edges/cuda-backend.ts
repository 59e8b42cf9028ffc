/**
 * The real NVIDIA backend in the page (Note [Browser edges], fs.ts): there
 * is none. The page replays on the simulated machine only, as `vmmkit
 * replay` does by default; asking for the real backend here says so.
 */
export class CudaBackend {
  constructor() {
    throw new Error('the page has no GPU driver: it replays on the simulated machine only');
  }
}
