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
        :root { --ink: #1b2126; --dim: #5d6870; --line: #dde2e6; --bg: #f4f5f7; --card: #fff;
          --accent: #0b5cc4; --accent-soft: #e7f0fc; --ok: #18794e; --ok-soft: #e4f4ea; --warn: #8a5a00; --warn-soft: #fff3d4;
          --bad: #b42318; --bad-soft: #fdecea; --radius: .7rem; --shadow: 0 1px 2px rgba(16,24,40,.06), 0 1px 3px rgba(16,24,40,.08); }
        * { box-sizing: border-box; }
        html { -webkit-text-size-adjust: 100%; }
        body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
          color: var(--ink); background: var(--bg); }
        a { color: var(--accent); }
        main { max-width: 64rem; margin: 0 auto; padding: 1rem 1rem 3rem; }
        h1 { font-size: 1.6rem; line-height: 1.25; margin: .4rem 0 .8rem; overflow-wrap: anywhere; }
        h2 { font-size: 1.15rem; margin: 1.6rem 0 .6rem; }
        p { margin: .35rem 0; }
        code { font-size: .88em; background: #eef1f4; padding: .05rem .3rem; border-radius: .25rem; overflow-wrap: anywhere; }
        [hidden] { display: none !important; }
        .bar { display: flex; align-items: center; gap: .4rem 1rem; padding: .55rem 1rem; background: var(--ink); color: #fff; flex-wrap: wrap; }
        .bar a { color: #fff; text-decoration: none; }
        .bar .brand { font-weight: 700; letter-spacing: .01em; margin-right: auto; }
        .bar nav { display: flex; gap: .9rem; flex-wrap: wrap; }
        .bar nav a { opacity: .85; }
        .bar nav a:hover { opacity: 1; text-decoration: underline; }
        .logout { margin: 0; }
        .bar button { padding: .3rem .75rem; background: transparent; border-color: #ffffff66; font-size: .9rem; }
        button, .button { font: inherit; font-weight: 500; padding: .55rem 1rem; border-radius: .5rem; border: 1px solid var(--accent);
          background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; display: inline-block; line-height: 1.3; }
        button:hover, .button:hover { filter: brightness(1.08); }
        button:disabled { opacity: .55; cursor: default; }
        button.plain, .button.plain { background: var(--card); color: var(--accent); border-color: #b9cde8; }
        button.danger, .button.danger { background: var(--card); color: var(--bad); border-color: #efb8b2; }
        .crumbs { color: var(--dim); font-size: .92rem; margin: 0; }
        .crumbs a { text-decoration: none; }
        .dim { color: var(--dim); font-size: .92rem; }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: var(--radius); padding: .9rem 1rem; min-width: 0; box-shadow: var(--shadow); }
        .cards { list-style: none; margin: 0; padding: 0; display: grid; gap: .8rem; grid-template-columns: repeat(auto-fill, minmax(18rem, 1fr)); }
        .card h2 { margin: 0 0 .3rem; font-size: 1.15rem; overflow-wrap: anywhere; }
        .state { display: inline-block; font-size: .82rem; font-weight: 600; padding: .08rem .55rem; border-radius: 1rem;
          background: var(--accent-soft); color: var(--accent); vertical-align: .1em; white-space: nowrap; }
        .state.complete, .state.idle { background: var(--ok-soft); color: var(--ok); }
        .state.partial, .state.unavailable, .state.interrupted { background: var(--warn-soft); color: var(--warn); }
        .state.refused, .state.failed { background: var(--bad-soft); color: var(--bad); }
        .state.stopped { background: #eceff1; color: var(--dim); }
        progress { width: 100%; height: .55rem; accent-color: var(--accent); }
        .now { margin: .2rem 0 1rem; }
        .progress-line { margin: .5rem 0; }
        .progress-line .words { font-variant-numeric: tabular-nums; }
        .thumbs { display: flex; gap: .3rem; overflow: hidden; align-items: center; }
        .thumbs img { width: 3.6rem; height: 3.6rem; object-fit: cover; border-radius: .35rem; background: var(--line); flex: none; }
        .thumbs .more { color: var(--dim); font-size: .85rem; padding: 0 .3rem; white-space: nowrap; }
        .thumbs.empty { display: none; }
        .folder-card .last { display: flex; flex-direction: column; gap: .4rem; margin-top: .6rem; text-decoration: none; color: inherit; }
        .batches { list-style: none; padding: 0; margin: 0; display: grid; gap: .6rem; }
        .batch-card { padding: 0; }
        .batch-card a { display: flex; gap: .8rem; align-items: center; padding: .7rem .9rem; color: inherit; text-decoration: none; flex-wrap: wrap; }
        .batch-card a:hover { background: #fafbfc; border-radius: var(--radius); }
        .batch-card .meta { display: flex; flex-direction: column; align-items: flex-start; min-width: 12rem; flex: 1; }
        .upload { margin: 0 0 1rem; padding: 0; overflow: hidden; }
        .dropzone { margin: .7rem; padding: 1.2rem 1rem; border: 2px dashed #c3d3e8; border-radius: .6rem; text-align: center; background: #fbfcfe; transition: background .15s, border-color .15s; }
        .dropzone.over { background: var(--accent-soft); border-color: var(--accent); }
        .dropzone .lead { font-size: 1.1rem; margin: 0 0 .4rem; }
        .dropzone input[type=file] { display: block; margin: .6rem auto; max-width: 100%; font: inherit; }
        .js .dropzone input[type=file] { position: absolute; width: 1px; height: 1px; opacity: 0; }
        .js .dropzone .send { display: none; }
        .result { padding: .2rem 1rem 1rem; border-top: 1px solid var(--line); }
        .result .headline { font-size: 1.1rem; font-weight: 600; margin: .6rem 0 .4rem; }
        .result.done .headline { color: var(--ok); }
        .result.problem .headline { color: var(--bad); }
        .result .ready-thumbs { margin: .6rem 0; flex-wrap: wrap; }
        .result .ready-thumbs img { width: 4.5rem; height: 4.5rem; }
        .files { list-style: none; padding: 0; margin: .4rem 0 0; }
        .files li { padding: .35rem 0; border-top: 1px solid var(--line); overflow-wrap: anywhere; font-size: .95rem; }
        .files li progress { display: block; margin-top: .25rem; height: .35rem; }
        .files li.accepted progress, .files li.refused progress { display: none; }
        .accepted { color: var(--ok); }
        .refused { color: var(--bad); }
        .login, .narrow { max-width: 24rem; }
        .add-user { margin-top: 1.2rem; }
        .login { margin: 2.5rem auto; padding: 1.4rem; }
        form label { display: block; margin: .7rem 0 .25rem; font-weight: 500; }
        form input[type=text], form input[type=password], form input:not([type]) { width: 100%; font: inherit; padding: .55rem .6rem; border: 1px solid #c8d0d7; border-radius: .45rem; background: #fff; }
        .login button, .narrow > button { width: 100%; margin-top: 1.1rem; }
        fieldset.choices { border: 1px solid var(--line); border-radius: .5rem; margin: .8rem 0; padding: .3rem .8rem .6rem; }
        fieldset.choices label { font-weight: 400; margin: .35rem 0; }
        .error { background: var(--bad-soft); color: var(--bad); padding: .55rem .75rem; border-radius: .5rem; }
        .ok-note { background: var(--ok-soft); color: var(--ok); padding: .55rem .75rem; border-radius: .5rem; }
        .note { background: var(--accent-soft); padding: .4rem .7rem; border-radius: .5rem; }
        .notice { position: sticky; top: 0; z-index: 5; background: #fff7e0; color: #5c3d00; border-bottom: 1px solid #f0d48a;
          padding: .65rem 1rem; display: flex; gap: .8rem; align-items: center; justify-content: center; flex-wrap: wrap; }
        .notice button { padding: .35rem .8rem; }
        .actions { display: flex; gap: .5rem; flex-wrap: wrap; margin: .8rem 0; align-items: center; }
        .actions form { margin: 0; }
        .batch-head h1 { margin-bottom: .2rem; }
        .batch-head .sub { font-size: 1.05rem; }
        .failures h2 { color: var(--bad); }
        .failure { border-color: #f3c4be; background: #fffafa; }
        .failure .name { font-weight: 600; overflow-wrap: anywhere; }
        .failure .actions { margin: .6rem 0 0; }
        .grid { list-style: none; margin: 0; padding: 0; display: grid; gap: .7rem; grid-template-columns: repeat(auto-fill, minmax(10.5rem, 1fr)); }
        .tile { background: var(--card); border: 1px solid var(--line); border-radius: var(--radius); overflow: hidden; box-shadow: var(--shadow); }
        .tile .picture { display: block; aspect-ratio: 1 / 1; background: #e9edf0; }
        .tile .picture img { width: 100%; height: 100%; object-fit: cover; display: block; }
        .tile .picture.tall { aspect-ratio: 3 / 4; }
        .tile .picture.tall img { object-fit: contain; background: #fff; }
        .tile p { margin: .35rem .55rem; font-size: .88rem; }
        .tile .name { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
        .tile .outs a { display: inline-block; margin-right: .45rem; text-decoration: none; font-size: .82rem; }
        .tile .warn { color: var(--warn); font-size: .8rem; }
        .share { margin: 1rem 0 1.4rem; }
        .share-link { border: 1px solid var(--line); border-radius: var(--radius); padding: .2rem .8rem .6rem; margin: .6rem 0; background: var(--card); }
        .share-link p { margin: .4rem 0; overflow-wrap: anywhere; }
        .share-link .qr svg { width: 10rem; height: 10rem; display: block; }
        .share-link form, .share-new { margin: .4rem 0; }
        .share-new { display: flex; gap: .6rem; flex-wrap: wrap; align-items: end; }
        .share .approve ul { list-style: none; padding: 0; columns: 14rem; }
        .share .approve textarea { width: 100%; max-width: 36rem; display: block; }
        .files-list { margin-top: 1.6rem; }
        .files-list summary, details summary { cursor: pointer; }
        .proof { margin-top: 1.6rem; }
        .proof img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: .4rem; margin-top: .6rem; }
        table.list { width: 100%; border-collapse: collapse; margin-top: .5rem; }
        table.list td { padding: .35rem .3rem; border-top: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; font-size: .92rem; }
        table.list td.size { text-align: right; white-space: nowrap; color: var(--dim); }
        .notes summary { cursor: pointer; color: var(--warn); }
        .users details { margin: .4rem 0; }
        .users form { margin: .4rem 0; }
        .warnings { max-width: 64rem; margin: 0 auto 2rem; padding: .8rem 1rem; background: var(--warn-soft); color: #5c3d00; border-radius: var(--radius); font-size: .9rem; }
        .warnings ul { margin: .3rem 0 0; padding-left: 1.2rem; }
        @media (max-width: 30rem) {
          main { padding: .8rem .75rem 2.5rem; }
          h1 { font-size: 1.4rem; }
          .wide { display: none; }
          .grid { grid-template-columns: repeat(2, minmax(0, 1fr)); gap: .5rem; }
          .actions .button, .actions button { width: 100%; text-align: center; }
          .actions form { width: 100%; }
          .bar nav { order: 3; width: 100%; }
          .thumbs img:nth-of-type(n+6) { display: none; }
        }
        """

    static let script = """
        'use strict';
        // PhotoFinish console: local times, live updates, uploads (drag-and-drop, three at a time,
        // each with its progress, tried again when the server restarts) that follow their photos
        // to "ready", and a tab out of date told to reload. Every page works without this script.
        (function () {
          var version = document.body.getAttribute('data-version');
          var days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
          var months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
          function two(n) { return (n < 10 ? '0' : '') + n; }
          function local(d) {
            var s = days[d.getDay()] + ' ' + d.getDate() + ' ' + months[d.getMonth()];
            if (d.getFullYear() !== new Date().getFullYear()) s += ' ' + d.getFullYear();
            return s + ', ' + two(d.getHours()) + ':' + two(d.getMinutes());
          }
          function localTimes(root) {
            root.querySelectorAll('time[datetime]').forEach(function (t) {
              var d = new Date(t.getAttribute('datetime'));
              if (isNaN(d)) return;
              t.title = d.toLocaleString();
              if (!t.hasAttribute('data-ago')) { t.textContent = local(d); return; }
              var s = Math.round((Date.now() - d) / 1000);
              t.textContent = s < 60 ? 'just now' : s < 3600 ? Math.round(s / 60) + ' min ago'
                : s < 86400 ? Math.round(s / 3600) + ' h ago' : local(d);
            });
          }

          // A bar at the top that says what to do (reload, log in again).
          var noticed = false;
          function notice(text, action, label) {
            var bar = document.getElementById('notice');
            if (!bar || noticed) return;
            noticed = true;
            bar.textContent = '';
            var p = document.createElement('span');
            p.textContent = text;
            bar.appendChild(p);
            if (action) {
              var b = document.createElement('button');
              b.type = 'button';
              b.textContent = label;
              b.addEventListener('click', action);
              bar.appendChild(b);
            }
            bar.hidden = false;
          }
          function reload() { location.reload(); }
          function loginAgain() { location.href = '/login?next=' + encodeURIComponent(location.pathname); }
          function stale() { notice('This page is out of date: reload it to go on.', reload, 'Reload'); }
          function ended() { notice('Your session has ended: log in again to go on.', loginAgain, 'Log in'); }
          // What an answer says about this tab: an upgrade (assets changed), a session ended.
          function check(xhrOrResponse) {
            var get = xhrOrResponse.getResponseHeader ? function (n) { return xhrOrResponse.getResponseHeader(n); }
              : function (n) { return xhrOrResponse.headers.get(n); };
            var v = get('X-Console-Version');
            if (v && version && v !== version) notice('PhotoFinish was updated: reload this page to go on.', reload, 'Reload');
            if (get('X-Console-Session') === 'ended') ended();
            if (get('X-Console-Stale')) stale();
          }

          // Elements with data-live are fetched again every 2 s while the page is shown, and
          // replaced by the same element of the new page when it changed.
          function live() {
            if (!document.querySelector('[data-live]')) return;
            var etag = null, busy = false;
            function tick() {
              if (busy || document.hidden || noticed) return;
              busy = true;
              var headers = { 'X-Live': '1' };
              if (etag) headers['If-None-Match'] = etag;
              fetch(location.pathname + location.search, { headers: headers, credentials: 'same-origin', redirect: 'manual' })
                .then(function (r) {
                  check(r);
                  if (r.status === 304 || !r.ok) return null;
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

          function plural(n, one, many) { return n + ' ' + (n === 1 ? one : (many || one + 's')); }

          // The upload form: files chosen or dropped are sent at once, one request each, three at a
          // time (one is received while the others are made safe on disk), each with its own
          // progress; a connection lost (a restart of PhotoFinish) is tried again. Then the
          // photos are followed, by their names in drop/, to their batch and until they are ready.
          function uploads() {
            var form = document.querySelector('form.upload');
            if (!form || !window.FormData || !window.XMLHttpRequest) return;
            document.documentElement.className += ' js';
            var input = form.querySelector('input[type=file]');
            var zone = form.querySelector('.dropzone');
            var result = form.querySelector('.result');
            var headline = result.querySelector('.headline'), detail = result.querySelector('.detail');
            var bar = result.querySelector('progress'), list = result.querySelector('.files');
            var readyThumbs = result.querySelector('.ready-thumbs');
            var max = Number(form.getAttribute('data-max-bytes')) || Infinity;
            var csrf = form.querySelector('input[name=csrf]').value;
            var rows = [], queue = [], sending = 0, sentBytes = {}, landed = [], since = 0, tracking = null, stopped = false;

            function say(text, more, state) {
              headline.textContent = text;
              detail.textContent = more || '';
              result.className = 'result' + (state ? ' ' + state : '');
              result.hidden = false;
            }
            function totals() {
              var size = 0, done = 0;
              rows.forEach(function (r) { size += r.file.size || 1; done += r.finished ? (r.file.size || 1) : (sentBytes[r.id] || 0); });
              return { size: size, done: done };
            }
            function showSending() {
              var t = totals(), ok = rows.filter(function (r) { return r.ok; }).length;
              var left = rows.filter(function (r) { return !r.finished; }).length;
              bar.max = t.size || 1; bar.value = t.done;
              if (left) say('Uploading ' + plural(rows.length, 'photo') + '…', ok + ' of ' + rows.length + ' uploaded');
            }
            function add(files) {
              if (stopped) return;
              readyThumbs.textContent = '';
              Array.prototype.forEach.call(files, function (file) {
                var li = document.createElement('li');
                var name = document.createElement('span'); name.textContent = file.name;
                var note = document.createElement('span'); note.className = 'dim';
                var p = document.createElement('progress'); p.max = file.size || 1; p.value = 0;
                li.appendChild(name); li.appendChild(document.createTextNode(' ')); li.appendChild(note); li.appendChild(p);
                list.appendChild(li);
                var row = { id: rows.length, file: file, li: li, note: note, bar: p, tries: 0, finished: false, ok: false };
                rows.push(row);
                if (file.size > max) { finish(row, false, 'larger than the limit of ' + form.getAttribute('data-max-text')); return; }
                queue.push(row);
              });
              showSending();
              pump();
            }
            function pump() {
              while (sending < 3 && queue.length && !stopped) send(queue.shift());
              if (!sending && !queue.length) allSent();
            }
            function finish(row, ok, text) {
              row.finished = true; row.ok = ok;
              row.li.className = ok ? 'accepted' : 'refused';
              row.note.textContent = '— ' + text;
            }
            function send(row) {
              sending++;
              var body = new FormData();
              body.append('csrf', csrf);
              body.append('photos', row.file, row.file.name);
              var xhr = new XMLHttpRequest();
              xhr.open('POST', form.action);
              xhr.setRequestHeader('Accept', 'application/json');
              xhr.upload.onprogress = function (e) {
                if (e.lengthComputable) { row.bar.max = e.total; row.bar.value = e.loaded; sentBytes[row.id] = e.loaded * (row.file.size / e.total); showSending(); }
              };
              xhr.onload = function () {
                sending--;
                check(xhr);
                var answer = null;
                try { answer = JSON.parse(xhr.responseText); } catch (e) {}
                if (xhr.status === 401) { halt(row, 'your session has ended'); ended(); }
                else if (xhr.status === 403 && answer && answer.stale) { halt(row, 'this page is out of date'); stale(); }
                else if (xhr.status === 503 || xhr.status === 502 || xhr.status === 504) return again(row);
                else if (answer && answer.accepted && answer.accepted.length) {
                  var a = answer.accepted[0];
                  finish(row, true, a.as === row.file.name ? 'uploaded' : 'uploaded as ' + a.as);
                  landed.push(a.track);
                  if (!since || a.at < since) since = a.at;
                } else if (answer && answer.refused && answer.refused.length) finish(row, false, answer.refused[0].reason);
                else finish(row, false, answer && answer.note ? answer.note : 'refused (' + xhr.status + ')');
                showSending();
                pump();
              };
              xhr.onerror = function () { sending--; again(row); };
              xhr.send(body);
            }
            // Nothing more is sent from this page: why, on the photo and at the top of the form.
            function halt(row, why) {
              stopped = true;
              finish(row, false, 'not sent: ' + why);
              queue.forEach(function (r) { finish(r, false, 'not sent: ' + why); });
              queue = [];
              say('Not sent: ' + why, 'Do as the note at the top of the page says, then send the photos again.', 'problem');
              bar.hidden = true;
            }
            // The connection failed (PhotoFinish restarting, the network gone): again after 1, 2,
            // 4 … 15 s, for two minutes; the file is sent whole again (nothing half-sent is kept).
            function again(row) {
              row.tries++;
              sentBytes[row.id] = 0;
              if (row.tries > 12) { finish(row, false, 'the connection failed'); showSending(); pump(); return; }
              row.note.textContent = '— the connection was lost: trying again';
              say('Waiting for PhotoFinish…', 'The connection was lost; uploads go on when it answers again.');
              setTimeout(function () { queue.unshift(row); pump(); }, Math.min(15000, 1000 * Math.pow(2, row.tries - 1)));
            }
            function allSent() {
              if (!rows.length || stopped) return;
              input.value = '';
              var ok = rows.filter(function (r) { return r.ok; }).length, bad = rows.length - ok;
              if (!ok) { say(bad === 1 ? 'The photo was refused' : 'The photos were refused', 'See each photo below.', 'problem'); result.querySelector('.each').open = true; return; }
              say(plural(ok, 'photo') + ' uploaded', bad ? plural(bad, 'photo') + ' refused (see below)' : 'Waiting for their batch to start…');
              if (!tracking) tracking = setTimeout(track, 800);
            }
            // Where the photos are now: their batches' counts, then "ready".
            function track() {
              tracking = null;
              if (stopped || !landed.length) return;
              var url = form.getAttribute('data-track') + '?f=' + landed.join('.') + '&since=' + since;
              fetch(url, { credentials: 'same-origin' }).then(function (r) {
                check(r);
                return r.ok ? r.json() : null;
              }).then(function (t) {
                if (!t) { tracking = setTimeout(track, 3000); return; }
                show(t);
              }).catch(function () { tracking = setTimeout(track, 3000); });
            }
            function show(t) {
              var n = t.photos.length, ready = 0, failed = 0, waiting = 0, ids = [];
              t.photos.forEach(function (p) {
                if (p.state === 'ready') ready++;
                else if (p.state === 'failed') failed++;
                else if (p.state === 'waiting') waiting++;
                if (p.batch && ids.indexOf(p.batch) < 0) ids.push(p.batch);
              });
              if (ready + failed === n) {
                var one = ids.length === 1 ? t.batches[ids[0]] : null;
                say(failed ? (ready ? ready + ' of your ' + plural(n, 'photo') + ' are ready, ' + failed + ' could not be finished'
                                    : (n === 1 ? 'Your photo could not be finished' : 'Your ' + n + ' photos could not be finished'))
                           : (n === 1 ? 'Your photo is ready' : 'Your ' + n + ' photos are ready'), '', failed && !ready ? 'problem' : 'done');
                bar.max = 1; bar.value = 1;
                detail.textContent = '';
                ids.forEach(function (id) {
                  var b = t.batches[id], a = document.createElement('a');
                  a.href = b.link; a.className = 'button';
                  a.textContent = ids.length === 1 ? (failed ? 'See them, and why' : 'See them') : 'See the batch of ' + b.label;
                  detail.appendChild(a); detail.appendChild(document.createTextNode(' '));
                  (b.thumbs || []).forEach(function (src) { var img = document.createElement('img'); img.src = src; img.alt = ''; readyThumbs.appendChild(img); });
                });
                if (one) detail.className = 'detail';
                document.dispatchEvent(new Event('photofinish:ready'));
                return;
              }
              var lines = [], done = 0, total = 0;
              ids.forEach(function (id) {
                var b = t.batches[id];
                if (b.stage === 'ready') return;
                var words = b.stage === 'queued' ? 'waiting its turn' : b.words + (b.stage === 'open' ? ' (more photos may join)' : '');
                lines.push(words);
                done += b.done; total += b.total;
              });
              if (waiting) lines.push(plural(waiting, 'photo') + ' waiting for the batch to start (it starts when no more photos arrive)');
              var stage = ids.length && t.batches[ids[ids.length - 1]].stage;
              var last = ids.length ? t.batches[ids[ids.length - 1]] : null;
              say(stage === 'outputs' ? 'Making the report' + (last.words.indexOf('story') >= 0 ? ' and story' : '') + '…'
                  : last && last.stage === 'open' && !waiting && done === total ? 'Waiting for more photos…'
                  : ids.length ? 'Finishing your ' + plural(n, 'photo') + '…' : plural(n, 'photo') + ' uploaded', lines.join(' · '));
              result.setAttribute('data-done', done); result.setAttribute('data-total', total);
              bar.max = total || 1; bar.value = done;
              tracking = setTimeout(track, 1000);
            }

            input.addEventListener('change', function () { if (input.files.length) add(input.files); });
            form.addEventListener('submit', function (e) { e.preventDefault(); if (input.files.length) add(input.files); });
            // Drag and drop, anywhere on the page (the zone lights up).
            var depth = 0;
            document.addEventListener('dragenter', function (e) { if (e.dataTransfer && Array.prototype.indexOf.call(e.dataTransfer.types, 'Files') >= 0) { depth++; zone.classList.add('over'); } });
            document.addEventListener('dragleave', function () { if (--depth <= 0) { depth = 0; zone.classList.remove('over'); } });
            document.addEventListener('dragover', function (e) { e.preventDefault(); });
            document.addEventListener('drop', function (e) {
              e.preventDefault(); depth = 0; zone.classList.remove('over');
              if (e.dataTransfer && e.dataTransfer.files.length) add(e.dataTransfer.files);
            });
          }

          // Forms that ask first (delete a batch, remove a login).
          function confirms() {
            document.querySelectorAll('form[data-confirm]').forEach(function (f) {
              f.addEventListener('submit', function (e) { if (!window.confirm(f.getAttribute('data-confirm'))) e.preventDefault(); });
            });
          }

          document.addEventListener('DOMContentLoaded', function () {
            localTimes(document);
            live();
            uploads();
            confirms();
          });
        })();
        """
}
