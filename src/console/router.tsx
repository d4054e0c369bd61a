/**
 * Routing in the browser: the console's pages are paths under /console (Quarry serves the same
 * page for all of them), changed with the History API so the back button and links work.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

const BASE = '/console';
const CHANGED = 'quarry:navigate';

/** The path below /console: `/`, `/tasks/tsk_…`, … */
function currentPath(): string {
  const rest = location.pathname.slice(BASE.length);
  return rest === '' ? '/' : rest;
}

export function navigate(to: string): void {
  history.pushState(null, '', BASE + to);
  window.dispatchEvent(new Event(CHANGED));
}

export function usePath(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const update = () => setPath(currentPath());
    window.addEventListener('popstate', update);
    window.addEventListener(CHANGED, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(CHANGED, update);
    };
  }, []);
  return path;
}

/** A real link (it opens in a new tab, shows its address), followed in place on a plain click. */
export function Link(props: { to: string; class?: string; children: ComponentChildren; 'aria-current'?: 'page'; 'aria-label'?: string }) {
  const { to, children, ...rest } = props;
  return (
    <a
      href={BASE + to}
      {...rest}
      onClick={(e) => {
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}
