import Batches
import Finishing
import System

/// The console's stylesheet and script, served from `/static/` (the Content-Security-Policy
/// allows no inline style or script). Every page works without the script; it only adds live
/// updates, per-file upload progress and local times.
enum Assets {
    /// Changes with the assets: their URLs carry it, so a browser never keeps an old one.
    static let version = String(SHA256.hex(of: Array((css + script).utf8)).prefix(10))

    static func named(_ name: String) -> (type: String, text: String)? {
        switch name {
        case "console.css": ("text/css; charset=utf-8", css)
        case "console.js": ("text/javascript; charset=utf-8", script)
        default: nil
        }
    }

    static let css = """
        :root { --ink: #1d2327; --dim: #5f6b73; --line: #d9dee2; --bg: #f6f7f8; --card: #fff;
          --accent: #0b63ce; --ok: #1a7f37; --warn: #9a6700; --bad: #c62828; }
        * { box-sizing: border-box; }
        html { -webkit-text-size-adjust: 100%; }
        body { margin: 0; font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
          color: var(--ink); background: var(--bg); }
        a { color: var(--accent); }
        main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
        h1 { font-size: 1.5rem; margin: .5rem 0 1rem; overflow-wrap: anywhere; }
        h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; }
        .bar { display: flex; align-items: center; justify-content: space-between; gap: .5rem;
          padding: .6rem 1rem; background: var(--ink); color: #fff; flex-wrap: wrap; }
        .bar a.brand { color: #fff; font-weight: 600; text-decoration: none; }
        .bar .who { opacity: .8; margin-right: .3rem; }
        .logout { margin: 0; }
        button, .button { font: inherit; padding: .55rem 1rem; border-radius: .4rem; border: 1px solid var(--accent);
          background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; display: inline-block; }
        .bar button { padding: .3rem .7rem; background: transparent; border-color: #fff8; }
        .button.plain { background: var(--card); color: var(--accent); }
        .cards { list-style: none; margin: 0; padding: 0; display: grid; gap: .75rem;
          grid-template-columns: repeat(auto-fill, minmax(17rem, 1fr)); }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: .6rem; padding: .9rem 1rem; min-width: 0; }
        .card h2 { margin: 0 0 .3rem; font-size: 1.1rem; overflow-wrap: anywhere; }
        .state { display: inline-block; font-size: .85rem; padding: .05rem .5rem; border-radius: 1rem;
          background: #e8f0fe; color: var(--accent); }
        .state.ok, .state.complete, .state.watching, .state.idle { background: #e6f4ea; color: var(--ok); }
        .state.partial, .state.unavailable, .state.interrupted { background: #fff4d6; color: var(--warn); }
        .state.refused, .state.failed { background: #fde7e7; color: var(--bad); }
        .state.stopped { background: #eceff1; color: var(--dim); }
        .dim { color: var(--dim); font-size: .92rem; }
        p { margin: .35rem 0; }
        progress { width: 100%; height: .6rem; }
        .thumbs { display: flex; gap: .3rem; margin-top: .5rem; overflow: hidden; }
        .thumbs img { width: 4rem; height: 4rem; object-fit: cover; border-radius: .3rem; background: var(--line); flex: none; }
        .batches { list-style: none; padding: 0; margin: 0; display: grid; gap: .6rem; }
        .upload { background: var(--card); border: 1px solid var(--line); border-radius: .6rem; padding: 1rem; }
        .upload input[type=file] { display: block; width: 100%; margin: .5rem 0 .8rem; font: inherit; }
        .files { list-style: none; padding: 0; margin: .5rem 0 0; }
        .files li { padding: .35rem 0; border-top: 1px solid var(--line); overflow-wrap: anywhere; }
        .files li progress { display: block; margin-top: .25rem; }
        .accepted { color: var(--ok); }
        .refused { color: var(--bad); }
        .login { max-width: 22rem; margin: 2rem auto; background: var(--card); border: 1px solid var(--line);
          border-radius: .6rem; padding: 1.2rem; }
        .login label { display: block; margin: .6rem 0 .2rem; }
        .login input { width: 100%; font: inherit; padding: .5rem; border: 1px solid var(--line); border-radius: .4rem; }
        .login button { width: 100%; margin-top: 1rem; }
        .error { background: #fde7e7; color: var(--bad); padding: .5rem .7rem; border-radius: .4rem; }
        .actions { display: flex; gap: .5rem; flex-wrap: wrap; margin: .8rem 0; }
        .proof img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: .4rem; }
        table.list { width: 100%; border-collapse: collapse; }
        table.list td { padding: .35rem .3rem; border-top: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
        table.list td.size { text-align: right; white-space: nowrap; color: var(--dim); }
        .notes summary { cursor: pointer; color: var(--warn); }
        """

    static let script = """
        'use strict';
        // PhotoFinish console: live updates, per-file upload progress, local times. Every page
        // works without this script.
        (function () {
          function localTimes(root) {
            root.querySelectorAll('time[datetime]').forEach(function (t) {
              var d = new Date(t.getAttribute('datetime'));
              if (isNaN(d)) return;
              var s = Math.round((Date.now() - d) / 1000), ago;
              if (s < 60) ago = 'just now';
              else if (s < 3600) ago = Math.round(s / 60) + ' min ago';
              else if (s < 86400) ago = Math.round(s / 3600) + ' h ago';
              else ago = d.toLocaleDateString();
              t.textContent = ago;
              t.title = d.toLocaleString();
            });
          }

          // Elements with data-live are fetched again every 2 s while the page is shown, and
          // replaced by the same element of the new page when it changed.
          function live() {
            var targets = document.querySelectorAll('[data-live]');
            if (!targets.length) return;
            var etag = null, busy = false;
            function tick() {
              if (busy || document.hidden) return;
              busy = true;
              var headers = { 'X-Live': '1' };
              if (etag) headers['If-None-Match'] = etag;
              fetch(location.pathname + location.search, { headers: headers, credentials: 'same-origin', redirect: 'manual' })
                .then(function (r) {
                  if (r.status === 304) return null;
                  if (r.type === 'opaqueredirect' || r.status === 401 || r.status === 403) { location.reload(); return null; }
                  if (!r.ok) return null;
                  etag = r.headers.get('ETag');
                  return r.text();
                })
                .then(function (text) {
                  if (!text) return;
                  var doc = new DOMParser().parseFromString(text, 'text/html');
                  document.querySelectorAll('[data-live]').forEach(function (el) {
                    var fresh = el.id && doc.getElementById(el.id);
                    if (fresh && fresh.innerHTML !== el.innerHTML) { el.innerHTML = fresh.innerHTML; localTimes(el); }
                  });
                })
                .catch(function () {})
                .then(function () { busy = false; });
            }
            setInterval(tick, 2000);
            document.addEventListener('visibilitychange', tick);
          }

          // The upload form sends one request per file, so each has its own progress and its own
          // answer, two at a time (one is received while the other is made safe on disk); a
          // file over the limit is refused before it is sent.
          function uploads() {
            var form = document.querySelector('form.upload');
            if (!form || !window.FormData || !window.XMLHttpRequest) return;
            var input = form.querySelector('input[type=file]');
            var list = form.querySelector('.files') || form.appendChild(document.createElement('ul'));
            list.className = 'files';
            var max = Number(form.getAttribute('data-max-bytes')) || Infinity;
            var csrf = form.querySelector('input[name=csrf]').value;
            form.addEventListener('submit', function (event) {
              event.preventDefault();
              var files = Array.prototype.slice.call(input.files);
              if (!files.length) return;
              list.textContent = '';
              var button = form.querySelector('button');
              button.disabled = true;
              var rows = files.map(function (file) {
                var li = document.createElement('li');
                var name = document.createElement('span');
                name.textContent = file.name;
                var note = document.createElement('span');
                note.className = 'dim';
                var bar = document.createElement('progress');
                bar.max = file.size || 1;
                bar.value = 0;
                li.appendChild(name);
                li.appendChild(document.createTextNode(' '));
                li.appendChild(note);
                li.appendChild(bar);
                list.appendChild(li);
                return { file: file, li: li, note: note, bar: bar };
              });
              var i = 0, sending = 0;
              function next() {
                if (i >= rows.length) {
                  if (sending === 0) { button.disabled = false; input.value = ''; }
                  return;
                }
                var row = rows[i++];
                if (row.file.size > max) {
                  finish(row, false, 'over the limit of ' + form.getAttribute('data-max-text'));
                  return next();
                }
                var body = new FormData();
                body.append('csrf', csrf);
                body.append('photos', row.file, row.file.name);
                var xhr = new XMLHttpRequest();
                xhr.open('POST', form.action);
                xhr.setRequestHeader('Accept', 'application/json');
                xhr.upload.onprogress = function (e) { if (e.lengthComputable) { row.bar.max = e.total; row.bar.value = e.loaded; } };
                sending++;
                xhr.onload = function () {
                  sending--;
                  var answer = null;
                  try { answer = JSON.parse(xhr.responseText); } catch (e) {}
                  if (answer && answer.accepted && answer.accepted.length) {
                    finish(row, true, 'uploaded as ' + answer.accepted[0].as);
                  } else if (answer && answer.refused && answer.refused.length) {
                    finish(row, false, answer.refused[0].reason);
                  } else {
                    finish(row, false, 'refused (' + xhr.status + ')');
                  }
                  next();
                };
                xhr.onerror = function () { sending--; finish(row, false, 'the connection failed'); next(); };
                xhr.send(body);
              }
              next();
              next();
            });
          }

          function finish(row, ok, text) {
            row.li.className = ok ? 'accepted' : 'refused';
            row.note.textContent = '— ' + text;
            row.bar.value = row.bar.max;
          }

          document.addEventListener('DOMContentLoaded', function () {
            localTimes(document);
            live();
            uploads();
          });
        })();
        """
}
