// Shared pieces: htm bound to Preact, hooks, units, and the components
// every page uses (forms whose errors sit beside their fields, charts).
import { h, createContext } from "preact";
import { useContext, useEffect, useRef, useState, useCallback } from "preact/hooks";
import htm from "htm";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export const html = htm.bind(h);
export { useEffect, useRef, useState, useCallback };

export const mhz = (khz) => (khz == null ? "—" : Math.round(khz / 1000));
export const pct = (ratio) => (ratio == null ? "—" : `${(ratio * 100).toFixed(0)} %`);
export function bytes(n) {
  if (n == null) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}
export function duration(secs) {
  if (secs == null) return "—";
  const d = Math.floor(secs / 86400), h = Math.floor(secs / 3600) % 24, m = Math.floor(secs / 60) % 60;
  return d ? `${d}d ${h}h ${m}m` : h ? `${h}h ${m}m` : `${m}m ${Math.floor(secs % 60)}s`;
}
export const when = (unix) => (unix == null ? "—" : new Date(unix * 1000).toLocaleString());

/** Calls `load` now and every `ms`; returns [data, error, reload]. */
export function usePoll(load, ms, deps = []) {
  const [state, setState] = useState({ data: null, error: null });
  const reload = useCallback(async () => {
    try { setState({ data: await load(), error: null }); } catch (e) { setState((s) => ({ data: s.data, error: e })); }
  }, deps);
  useEffect(() => {
    reload();
    if (!ms) return undefined;
    const timer = setInterval(reload, ms);
    return () => clearInterval(timer);
  }, [reload, ms]);
  return [state.data, state.error, reload];
}

const FormError = createContext(null);

/**
 * A form that sends its values through `submit` and shows the API's error
 * in its alert and beside the field the API names.
 */
export function Form({ id, submit, button, children, done }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  async function onSubmit(event) {
    event.preventDefault();
    const form = event.currentTarget;
    const values = {};
    for (const el of form.elements) {
      if (!el.name) continue;
      if (el.type === "checkbox") values[el.name] = el.checked;
      else if (el.type === "number") values[el.name] = el.value === "" ? null : Number(el.value);
      else values[el.name] = el.value;
    }
    setError(null);
    setBusy(true);
    try {
      const result = await submit(values);
      done?.(result, form);
    } catch (e) {
      setError(e);
      const field = e.field && form.querySelector(`[name="${CSS.escape(e.field)}"]`);
      field?.focus();
    } finally {
      setBusy(false);
    }
  }
  return html`<form id=${id} novalidate onSubmit=${onSubmit}>
    <${FormError.Provider} value=${error}>${children}</${FormError.Provider}>
    <button type="submit" disabled=${busy}>${button}</button>
    <p class="error" role="alert">${error?.message ?? ""}</p>
  </form>`;
}

/** A labelled input; the API's error for `name` is shown right after it. */
export function Field({ label, name, type = "text", value, options, ...rest }) {
  const error = useContext(FormError);
  const mine = error?.field === name || error?.field?.endsWith("." + name);
  const input = options
    ? html`<select name=${name} aria-invalid=${mine ? "true" : undefined} ...${rest}>
        ${options.map((o) => html`<option value=${o.value ?? o} selected=${(o.value ?? o) === value}>${o.label ?? o}</option>`)}
      </select>`
    : type === "checkbox"
      ? html`<input type="checkbox" name=${name} defaultChecked=${!!value} ...${rest}/>`
      // Uncontrolled: what the user typed stays when an error re-renders.
      : html`<input type=${type} name=${name} defaultValue=${value ?? ""} aria-invalid=${mine ? "true" : undefined} ...${rest}/>`;
  return html`<label class=${type === "checkbox" ? "check" : ""}>${label} ${input}
    ${mine ? html`<span class="field-error">${error.message}</span>` : null}</label>`;
}

/**
 * A uPlot chart. `data` is [times, ...series]; drag to zoom, double-click
 * to zoom back out.
 */
export function Chart({ title, data, series, height = 200, yFormat }) {
  const box = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    const width = box.current.clientWidth || 600;
    const colours = ["#2a7ab0", "#d9822b", "#3a9d5d", "#b04a7a", "#7a5ab0", "#8a8a2a"];
    plot.current = new uPlot({
      width,
      height,
      series: [{}, ...series.map((label, i) => ({
        label, stroke: colours[i % colours.length], width: 1.5,
        value: (u, v) => (v == null ? "—" : yFormat ? yFormat(v) : v.toFixed(1)),
      }))],
      axes: [{}, { values: (u, vals) => vals.map((v) => (yFormat ? yFormat(v) : v)), size: 60 }],
      cursor: { drag: { x: true, y: false } },
    }, data, box.current);
    const resize = () => plot.current?.setSize({ width: box.current.clientWidth, height });
    window.addEventListener("resize", resize);
    return () => { window.removeEventListener("resize", resize); plot.current?.destroy(); };
  }, [series.join("|")]);
  useEffect(() => { plot.current?.setData(data); }, [data]);
  // The newest value of each series, for tests and for screen readers.
  const last = data.slice(1).map((ys) => [...ys].reverse().find((v) => v != null) ?? null);
  return html`<figure class="chart" data-points=${data[0]?.length ?? 0} data-last=${JSON.stringify(last)}>
    <figcaption>${title}</figcaption><div ref=${box}></div></figure>`;
}
