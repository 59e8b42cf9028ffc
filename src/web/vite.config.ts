/**
 * The page's build: `vite build -c src/web/vite.config.ts` writes
 * dist/web/index.html, one file holding the page's script (the engine
 * worker inlined in it, started from a blob URL), uPlot and the styles, so
 * that the same file is what `vmmkit open` serves and what `vmmkit report`
 * fills with data and writes (Note [One page]).
 *
 * The engine's few Node imports resolve to the page's counterparts (Note
 * [Browser edges], engine/edges/fs.ts); any other Node module reached from
 * the page fails the build.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';

const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = join(HERE, '../../dist/web');
const EDGES: Readonly<Record<string, string>> = {
  'node:fs': 'fs.ts',
  'node:url': 'url.ts',
  'node:worker_threads': 'worker_threads.ts',
  'node:os': 'os.ts',
  'node:buffer': 'buffer.ts',
};

/** Modules of ours that only Node can run: the real GPU's backend (libcuda through koffi). */
const NODE_ONLY: Readonly<Record<string, string>> = {
  'src/backends/cuda/backend.js': 'cuda-backend.ts',
};

/** Node's modules: the edges' counterparts, and a build error for any other. */
function browserEdges(): Plugin {
  return {
    name: 'vmmkit-browser-edges',
    enforce: 'pre',
    resolveId(id, importer) {
      if (importer !== undefined && id.startsWith('.')) {
        const target = join(dirname(importer), id).slice(join(HERE, '../..').length + 1);
        const own = NODE_ONLY[target];
        if (own !== undefined) return join(HERE, 'engine/edges', own);
      }
      const bare = id.startsWith('node:') ? id : undefined;
      if (bare === undefined) return null;
      const edge = EDGES[bare];
      if (edge === undefined)
        this.error(
          `${importer ?? 'the page'} imports ${id}, which the page cannot have (Note [Browser edges])`,
        );
      return join(HERE, 'engine/edges', edge);
    },
  };
}

/** dist/web/index.html: the shell with the script and styles inlined, and nothing else left in dist/web. */
function onePage(): Plugin {
  return {
    name: 'vmmkit-one-page',
    apply: 'build',
    generateBundle(_options, bundle) {
      const scripts: string[] = [];
      for (const [name, item] of Object.entries(bundle)) {
        if (item.type === 'chunk') scripts.push(item.code);
        delete bundle[name];
      }
      // The styles are read here, not imported by the script: uPlot's, then the page's own.
      const styles = [
        readFileSync(createRequire(import.meta.url).resolve('uplot/dist/uPlot.min.css'), 'utf8'),
        readFileSync(join(HERE, 'page.css'), 'utf8'),
      ];
      const shell = readFileSync(join(HERE, 'page.html'), 'utf8');
      // A `</script` inside the code would end the element: written as `<\/script`, the same string to the parser.
      const code = scripts.join('\n').replace(/<\/(script)/gi, '<\\/$1');
      const html = shell
        .replace('<!--styles-->', () => `<style>${styles.join('\n')}</style>`)
        .replace('<!--script-->', () => `<script>${code}</script>`);
      this.emitFile({ type: 'asset', fileName: 'index.html', source: html });
    },
  };
}

export default defineConfig({
  root: HERE,
  logLevel: 'warn',
  plugins: [browserEdges(), onePage()],
  worker: { format: 'iife', plugins: () => [browserEdges()] },
  build: {
    outDir: OUT,
    emptyOutDir: true,
    target: 'es2022',
    minify: true,
    sourcemap: false,
    lib: {
      entry: join(HERE, 'main.ts'),
      name: 'vmmkitPage',
      formats: ['iife'],
      fileName: () => 'page.js',
      cssFileName: 'page',
    },
  },
});
