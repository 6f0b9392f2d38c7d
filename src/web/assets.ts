/**
 * The developer area's only stylesheet and script, served by the Worker itself (no CDN). The
 * script is progressive: copy buttons, confirmations, forms sent once (a double click would
 * show the second answer, e.g. a new key's secret lost); every action also works without it.
 */
export const appCss = `
:root{--fg:#16181d;--muted:#5b6270;--line:#e3e6eb;--bg:#f7f8fa;--card:#fff;--accent:#3451d1;--accent-fg:#fff;--danger:#b42318;--ok:#027a48;--warn:#b54708}
*{box-sizing:border-box}
[hidden]{display:none!important}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--accent)}
header.top{background:var(--card);border-bottom:1px solid var(--line)}
header.top .bar{max-width:1200px;margin:0 auto;padding:10px 16px;display:flex;flex-wrap:wrap;align-items:center;gap:8px 18px}
header.top .brand{font-weight:700;text-decoration:none;color:var(--fg);margin-right:auto}
nav.tabs{display:flex;flex-wrap:wrap;gap:4px}
nav.tabs a{padding:6px 10px;border-radius:6px;text-decoration:none;color:var(--muted)}
nav.tabs a[aria-current=page]{background:#eef1fd;color:var(--accent);font-weight:600}
main{max-width:1040px;margin:0 auto;padding:20px 16px 48px}
main.narrow{max-width:420px;padding-top:48px}
h1{font-size:1.5rem;margin:0 0 16px}
h2{font-size:1.15rem;margin:28px 0 10px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px;margin-bottom:16px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;margin-bottom:16px}
.grid .card{margin:0}
.who{display:flex;flex-wrap:wrap;align-items:center;gap:8px;font-size:.82rem;color:var(--muted);min-width:0;max-width:100%}
.who span{overflow-wrap:anywhere;min-width:0}
main,h1,.card,.notice{overflow-wrap:anywhere}
.who button{padding:5px 10px;font-size:.85rem}
.stat .label{color:var(--muted);font-size:.85rem}
.stat .value{font-size:1.6rem;font-weight:700}
.muted{color:var(--muted)}
.notice{padding:10px 12px;border-radius:8px;margin-bottom:16px;border:1px solid}
.notice.error{background:#fef3f2;border-color:#fecdca;color:var(--danger)}
.notice.ok{background:#ecfdf3;border-color:#abefc6;color:var(--ok)}
.notice.info{background:#eef4ff;border-color:#c7d7fe;color:#1d3a8a}
form.stack{display:flex;flex-direction:column;gap:12px}
form.inline{display:inline}
label{display:flex;flex-direction:column;gap:4px;font-weight:600;font-size:.9rem}
fieldset{border:1px solid var(--line);border-radius:8px;padding:10px 12px;margin:0;min-width:0}
legend{font-weight:600;font-size:.9rem;padding:0 4px}
label.check{flex-direction:row;align-items:flex-start;gap:8px;font-weight:400}
label.check input{margin-top:4px;flex:none}
input,select{font:inherit;padding:9px 10px;border:1px solid #c9ced6;border-radius:7px;background:#fff;min-width:0}
button,.button{font:inherit;cursor:pointer;border:1px solid var(--accent);background:var(--accent);color:var(--accent-fg);padding:8px 14px;border-radius:7px;text-decoration:none;display:inline-block}
button.secondary,.button.secondary{background:#fff;color:var(--accent)}
button.danger{background:#fff;color:var(--danger);border-color:#f3b5af}
button:disabled{opacity:.5;cursor:not-allowed}
.row{display:flex;flex-wrap:wrap;gap:8px;align-items:end}
.table-wrap{overflow-x:auto;border:1px solid var(--line);border-radius:10px;background:linear-gradient(to right,var(--card) 30%,#fff0) 0 0/40px 100% no-repeat local,linear-gradient(to left,var(--card) 30%,#fff0) 100% 0/40px 100% no-repeat local,radial-gradient(farthest-side at 0 50%,#0003,#0000) 0 0/14px 100% no-repeat scroll,radial-gradient(farthest-side at 100% 50%,#0003,#0000) 100% 0/14px 100% no-repeat scroll,var(--card)}
table{border-collapse:collapse;width:100%;font-size:.92rem}
th,td{text-align:left;padding:8px 10px;border-bottom:1px solid var(--line);white-space:nowrap}
td.wrap{white-space:normal;min-width:180px;overflow-wrap:anywhere}
th{color:var(--muted);font-weight:600;font-size:.82rem;text-transform:uppercase;letter-spacing:.02em}
tr:last-child td{border-bottom:0}
.num{text-align:right;font-variant-numeric:tabular-nums}
.pos{color:var(--ok)}.neg{color:var(--danger)}
.badge{display:inline-block;padding:1px 8px;border-radius:99px;font-size:.8rem;background:#f2f4f7;color:var(--muted)}
.badge.completed,.badge.paid,.badge.active,.badge.ready{background:#ecfdf3;color:var(--ok)}
.badge.failed,.badge.revoked,.badge.refunded{background:#fef3f2;color:var(--danger)}
.badge.queued,.badge.processing{background:#fffaeb;color:var(--warn)}
.secret{display:flex;gap:8px;align-items:center}
.secret input{flex:1;font-family:ui-monospace,monospace}
code{font-family:ui-monospace,SFMono-Regular,monospace;font-size:.9em}
ol.steps{margin:0;padding-left:1.4rem}ol.steps li{margin:1px 0}
.offers{display:grid;grid-template-columns:repeat(auto-fit,minmax(180px,1fr));gap:12px}
.offer{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px;display:flex;flex-direction:column;gap:6px}
.offer.current{border-color:var(--accent);box-shadow:0 0 0 1px var(--accent)}
.offer .price{font-size:1.3rem;font-weight:700}
.chart svg{width:100%;height:auto;display:block}
.plot{overflow-x:auto}
.legend{display:flex;flex-wrap:wrap;gap:6px 14px;font-size:.85rem;margin-top:8px}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px}
main.narrow.wide{max-width:760px;padding-top:24px}
textarea{font:inherit;padding:8px;border:1px solid #c9ced6;border-radius:7px;min-width:0}
video.player{display:block;width:100%;max-height:70vh;background:#000;border-radius:8px}
ol.thread{list-style:none;margin:0 0 12px;padding:0}
ol.thread li{padding:10px 0;border-bottom:1px solid var(--line)}
ol.thread li:last-child{border-bottom:0}
ol.thread .meta{display:flex;flex-wrap:wrap;gap:4px 10px;align-items:center;font-size:.9rem}
ol.thread p{margin:4px 0 0;white-space:pre-wrap}
a.timecode{font-weight:600;font-variant-numeric:tabular-nums;background:#eef1fd;padding:1px 9px;border-radius:99px;text-decoration:none}
label.timefield{flex:none}label.timefield input{width:7.5rem}
main.wide label .muted{font-weight:400}
label.grow{flex:1 1 12rem}
p.hint{margin:-4px 0 0;font-size:.85rem}
pre.mail{white-space:pre-wrap;word-break:break-all;background:#f2f4f7;padding:10px;border-radius:6px}
@media (max-width:600px){table.cards,table.cards tbody,table.cards tr,table.cards td{display:block}table.cards thead{display:none}table.cards tr{padding:6px 0;border-bottom:1px solid var(--line)}table.cards tr:last-child{border-bottom:0}table.cards td{border:0;padding:3px 12px;white-space:normal;overflow-wrap:anywhere;min-width:0;text-align:left}table.cards td::before{display:inline-block;min-width:6.5rem;margin-right:8px;color:var(--muted);font-size:.78rem;font-weight:600;text-transform:uppercase;letter-spacing:.02em}table.cards td[colspan]::before{content:none}.table-wrap{background:var(--card)}h1{font-size:1.3rem}.stat .value{font-size:1.3rem}.chart svg text{font-size:16px}.plot{direction:rtl}.plot svg{direction:ltr;min-width:560px}}
`;

export const appJs = `
// Copy buttons need a script: hidden in the page, shown here (without it the field is selectable).
for (const button of document.querySelectorAll("[data-copy]")) button.hidden = false;
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy]");
  if (button) {
    const input = document.getElementById(button.dataset.copy);
    try { await navigator.clipboard.writeText(input.value); } catch { input.select(); document.execCommand("copy"); }
    button.textContent = "Copied";
    return;
  }
  const confirmed = event.target.closest("[data-confirm]");
  if (confirmed && !confirm(confirmed.dataset.confirm)) event.preventDefault();
});
// The review page: the time field follows the paused video, and a comment's timestamp seeks it
// (without a script, the timestamp reloads the page with the video starting there).
const player = document.querySelector("[data-review-player]");
if (player) {
  const clock = (seconds) => {
    const t = Math.floor(seconds), h = Math.floor(t / 3600), m = Math.floor((t % 3600) / 60), s = t % 60;
    const two = (n) => String(n).padStart(2, "0");
    return h ? h + ":" + two(m) + ":" + two(s) : two(m) + ":" + two(s);
  };
  const field = document.querySelector("input[data-timecode]");
  if (field) {
    let typed = field.value !== "";
    const follow = () => { if (!typed) field.value = clock(player.currentTime); };
    field.addEventListener("input", () => { typed = true; });
    player.addEventListener("pause", follow);
    player.addEventListener("seeked", follow);
    for (const button of document.querySelectorAll("[data-use-time]")) {
      button.hidden = false;
      button.addEventListener("click", () => { typed = false; follow(); });
    }
    // Writing a comment stops the video at the moment it is about.
    field.form.querySelector("textarea")?.addEventListener("focus", () => { if (!player.paused) player.pause(); });
  }
  document.addEventListener("click", (event) => {
    const link = event.target.closest("a[data-seek]");
    if (!link) return;
    event.preventDefault();
    player.pause();
    player.currentTime = Number(link.dataset.seek);
    player.scrollIntoView({ block: "nearest", behavior: "smooth" });
  });
}
document.addEventListener("submit", (event) => {
  const form = event.target.closest("form[data-once]");
  if (!form) return;
  if (form.dataset.sent) event.preventDefault();
  form.dataset.sent = "1";
});
`;
