import { navigate } from './dom.js';
import { renderSessionPage } from './session-page.js';
import { renderSessionsList } from './sessions-list.js';

/** The console's two pages: the sessions list (/) and one session (/sessions/SESSION_ID). */
let leave = () => {};

function route() {
  leave();
  const main = document.getElementById('main');
  main.replaceChildren();
  const match = /^\/sessions\/([^/]+)\/?$/.exec(location.pathname);
  leave = match ? renderSessionPage(main, decodeURIComponent(match[1])) : renderSessionsList(main);
}

// Internal links navigate without a reload; modifier clicks keep their usual meaning.
document.addEventListener('click', (event) => {
  const link = event.target.closest?.('a[data-nav]');
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  event.preventDefault();
  navigate(link.getAttribute('href'));
});
window.addEventListener('popstate', route);
route();
