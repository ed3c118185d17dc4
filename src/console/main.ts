// The console's entry point, bundled by esbuild (src/http/routes/console.ts).

import { html, render } from 'htm/preact';
import { App } from './app.js';
import './console.css';

render(html`<${App} />`, document.getElementById('app')!);
