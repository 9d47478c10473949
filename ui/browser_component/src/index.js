// window.BrowserBench: the standalone page's entry (mountPage), the Streamlit component's (streamlitComponent),
// and the statistics (summarize), which tests compare with core/runtime/stats.py.
export { benchmark } from "./page.js";
export { summarize } from "./stats.js";
export { streamlitComponent } from "./streamlit.js";
export { mountPage } from "./standalone.js";
