/** A module the page's bundler (vite) makes: the engine worker inlined, started from a blob URL. */
declare module '*?worker&inline' {
  const WorkerConstructor: new () => Worker;
  export default WorkerConstructor;
}
