// gulpdb view: the page. Plain JavaScript, no build step, no network but
// the server that sent it (docs/view.md says what each part shows).
//
// The grid is virtual: only the cells in view exist, filled from pages of
// 60 videos that the server reads by position, so that the page costs the
// same at any dataset size. Tests and the benchmark read window.gulpdbView.
'use strict';

(() => {
  const PAGE = 60;            // videos per request of the grid
  const MAX_PAGES = 32;       // pages kept in memory (with their thumbnails)
  const MAX_SPACER = 8e6;     // px: beyond this the scroll bar is scaled
  const HOVER_FRAMES = 8;     // frames a thumbnail plays on hover
  const STRIP_MAX = 64;       // thumbnails in a video's frame strip
  const DEFAULT_FPS = 8;      // gulpdb ingest's default; meta "fps" wins

  const $ = (id) => document.getElementById(id);
  const state = {
    info: null,
    filter: '',
    split: '',
    generation: 0,        // bumped when the filter, split or data change
    total: 0,
    pages: new Map(),     // page start -> {videos} or {error}
    pending: new Map(),   // page start -> Promise
    cellW: 176,
    cellH: 176,
    cols: 1,
    cells: [],            // the cell elements in use
    hover: null,
  };

  // ---- the server ---------------------------------------------------------

  // GET /api/<path>; `params` is an object, or a query string already
  // encoded (an id as the server percent-encoded it).
  async function api(path, params) {
    const query = typeof params === 'string' ? params
      : new URLSearchParams(params || {}).toString();
    const response = await fetch('/api/' + path + (query ? '?' + query : ''),
                                 {credentials: 'same-origin', cache: 'no-store'});
    const body = await response.json().catch(() => ({error: 'the answer is not JSON'}));
    if (!response.ok) {
      const error = new Error(body.error || ('HTTP ' + response.status));
      error.status = response.status;
      throw error;
    }
    return body;
  }

  // A frame's address: the id as the server percent-encoded it, the
  // video's insertion sequence (a replaced video gets new addresses).
  function frameUrl(video, frame, max) {
    return '/api/frame?id=' + video.q + '&frame=' + frame + '&max=' + max + '&v=' + video.seq;
  }

  // What a failed image load was: the server's JSON error text.
  async function imageError(url) {
    try {
      const response = await fetch(url, {credentials: 'same-origin', cache: 'no-store'});
      if (response.ok) return 'the browser could not decode the image';
      const body = await response.json();
      return body.error || ('HTTP ' + response.status);
    } catch (e) {
      return String(e);
    }
  }

  function metaOf(video) {
    if (video.parsed === undefined) {
      try {
        video.parsed = JSON.parse(video.meta);
      } catch (e) {
        video.parsed = null;
      }
    }
    const list = video.parsed;
    return Array.isArray(list) && list.length && list[0] && typeof list[0] === 'object'
      ? list[0] : null;
  }

  function labelOf(video) {
    const meta = metaOf(video);
    const key = state.info.label_key;
    if (!meta || !(key in meta)) return '';
    const value = meta[key];
    return typeof value === 'string' ? value : JSON.stringify(value);
  }

  function fpsOf(video) {
    const meta = metaOf(video);
    for (const key of ['fps', 'frame_rate']) {
      const value = meta && meta[key];
      if (typeof value === 'number' && value > 0 && value <= 240) return value;
    }
    return DEFAULT_FPS;
  }

  const middle = (video) => Math.floor(video.frames / 2);

  // A cell's picture: the thumbnail that came with its page (the middle
  // frame), else the frame's own address.
  function thumbSrc(video) {
    return video.thumb ? 'data:image/jpeg;base64,' + video.thumb
      : frameUrl(video, middle(video), state.info.thumb_side);
  }

  // ---- pages of the grid --------------------------------------------------

  function loadPage(start) {
    if (state.pages.has(start)) return Promise.resolve(state.pages.get(start));
    if (state.pending.has(start)) return state.pending.get(start);
    const generation = state.generation;
    // The page's thumbnails come with it: one request, made as one batch on
    // the server (concurrent range requests for a dataset in an object
    // store), where sixty requests would queue on the browser's six
    // connections.
    const params = {start: start, count: PAGE, thumbs: 1};
    if (state.filter) params.filter = state.filter;
    if (state.split) params.split = state.split;
    const promise = api('videos', params).then((body) => {
      if (generation !== state.generation) return null;
      state.pending.delete(start);
      const page = {videos: body.videos};
      state.pages.set(start, page);
      if (state.pages.size > MAX_PAGES) {
        state.pages.delete(state.pages.keys().next().value);
      }
      if (body.total !== state.total) setTotal(body.total);
      return page;
    }, (error) => {
      if (generation !== state.generation) return null;
      state.pending.delete(start);
      showFilterError(error.message);
      const page = {videos: [], error: error.message};
      state.pages.set(start, page);
      return page;
    });
    state.pending.set(start, promise);
    return promise;
  }

  function videoAt(position) {
    const start = position - (position % PAGE);
    const page = state.pages.get(start);
    return page ? page.videos[position - start] || null : undefined;
  }

  function resetPages() {
    state.generation += 1;
    state.pages.clear();
    state.pending.clear();
  }

  // ---- the virtual grid ---------------------------------------------------

  const scroller = () => $('grid-scroller');

  function geometry() {
    const side = state.info.thumb_side;
    state.cellW = side + 16;
    state.cellH = Math.round(side * 0.75) + 52;
    state.cols = Math.max(1, Math.floor(scroller().clientWidth / state.cellW));
    const rows = Math.ceil(state.total / state.cols);
    const height = rows * state.cellH;
    $('grid-spacer').style.height = Math.min(height, MAX_SPACER) + 'px';
    $('empty').hidden = state.total !== 0;
  }

  function setTotal(total) {
    state.total = total;
    if (!state.info) return;  // the first page came before the dataset's info
    $('count').textContent = total.toLocaleString('en-US') + ' videos' +
      (state.filter || state.split ? ' selected' : '');
    geometry();
    render();
  }

  // The virtual scroll position: the real one, scaled when the content is
  // taller than the spacer.
  function virtualTop() {
    const el = scroller();
    const content = Math.ceil(state.total / state.cols) * state.cellH;
    const spacer = Math.min(content, MAX_SPACER);
    const range = spacer - el.clientHeight;
    if (content <= MAX_SPACER || range <= 0) return el.scrollTop;
    return el.scrollTop / range * (content - el.clientHeight);
  }

  function visibleRange() {
    const top = virtualTop();
    const firstRow = Math.floor(top / state.cellH);
    const rows = Math.ceil(scroller().clientHeight / state.cellH) + 1;
    const first = firstRow * state.cols;
    const end = Math.min(state.total, (firstRow + rows) * state.cols);
    return {first: first, end: Math.max(first, end), offset: top - firstRow * state.cellH};
  }

  function makeCell() {
    const cell = document.createElement('div');
    cell.className = 'cell';
    cell.innerHTML = '<div class="thumb"><img alt=""></div><div class="id"></div>' +
                     '<div class="label"></div><div class="damage"></div>';
    cell.addEventListener('click', () => {
      if (cell.video) location.hash = 'v=' + cell.video.q;
    });
    cell.addEventListener('mouseenter', () => startHover(cell));
    cell.addEventListener('mouseleave', () => stopHover(cell));
    const img = cell.querySelector('img');
    img.addEventListener('error', () => {
      if (!cell.video || !img.getAttribute('src')) return;
      cell.classList.add('damaged');
      imageError(img.src).then((text) => {
        cell.querySelector('.damage').textContent = 'damaged: ' + text;
        cell.title = text;
      });
    });
    $('grid').appendChild(cell);
    return cell;
  }

  function fillCell(cell, position, video) {
    const side = state.info.thumb_side;
    cell.style.left = ((position % state.cols) * state.cellW + 2) + 'px';
    cell.style.width = (state.cellW - 4) + 'px';
    cell.style.height = (state.cellH - 4) + 'px';
    cell.querySelector('.thumb').style.height = Math.round(side * 0.75) + 'px';
    cell.querySelector('.damage').style.height = Math.round(side * 0.75) + 'px';
    cell.dataset.position = String(position);
    if (cell.video === video) return;
    if (state.hover && state.hover.cell === cell) stopHover();
    cell.video = video || null;
    const img = cell.querySelector('img');
    cell.classList.remove('damaged');
    cell.querySelector('.damage').textContent = '';
    cell.title = '';
    if (!video) {
      cell.classList.add('placeholder');
      img.removeAttribute('src');
      img.removeAttribute('data-frame');
      delete cell.dataset.id;
      cell.querySelector('.id').textContent = '';
      cell.querySelector('.label').textContent = '';
      return;
    }
    cell.classList.remove('placeholder');
    cell.dataset.id = video.id;
    img.dataset.frame = String(middle(video));
    if (video.thumb_error) {
      img.removeAttribute('src');
      cell.classList.add('damaged');
      cell.querySelector('.damage').textContent = 'damaged: ' + video.thumb_error;
      cell.title = video.thumb_error;
    } else if (video.frames > 0) {
      img.src = thumbSrc(video);
    } else {
      img.removeAttribute('src');
    }
    cell.querySelector('.id').textContent = video.id;
    cell.querySelector('.label').textContent = labelOf(video);
  }

  function render() {
    if (!state.info) return;
    const range = visibleRange();
    const rowTop = scroller().scrollTop - range.offset;
    $('grid').style.transform = 'translateY(' + rowTop + 'px)';
    const count = range.end - range.first;
    while (state.cells.length < count) state.cells.push(makeCell());
    const firstRow = Math.floor(range.first / state.cols);
    for (let i = 0; i < state.cells.length; i++) {
      const cell = state.cells[i];
      if (i >= count) {
        cell.hidden = true;
        continue;
      }
      cell.hidden = false;
      const position = range.first + i;
      const row = Math.floor(position / state.cols) - firstRow;
      cell.style.top = (row * state.cellH + 2) + 'px';
      const video = videoAt(position);
      fillCell(cell, position, video);
      if (video === undefined) loadPage(position - (position % PAGE)).then(scheduleRender);
    }
  }

  let renderQueued = false;
  function scheduleRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => {
      renderQueued = false;
      render();
    });
  }

  // Resolves once the cells in view show their videos and every thumbnail
  // among them is decoded (or failed).
  async function settle() {
    for (let round = 0; round < 50; round++) {
      const range = visibleRange();
      const starts = new Set();
      for (let p = range.first; p < range.end; p += 1) starts.add(p - (p % PAGE));
      await Promise.all([...starts].map(loadPage));
      render();
      const imgs = state.cells.filter((c) => !c.hidden && c.video && c.video.frames > 0 &&
                                               !c.video.thumb_error)
        .map((c) => c.querySelector('img'));
      await Promise.all(imgs.map((img) => img.decode().catch(() => null)));
      const after = visibleRange();
      let missing = false;
      for (let p = after.first; p < after.end && !missing; p++) missing = videoAt(p) === undefined;
      if (after.first === range.first && after.end === range.end && !missing) return;
    }
  }

  // Decodes the thumbnails of the page at `start` (in view or not).
  async function decodePage(start) {
    const page = await loadPage(start);
    if (!page) return 0;
    await Promise.all(page.videos.filter((v) => v.frames > 0 && !v.thumb_error).map((v) => {
      const img = new Image();
      img.src = thumbSrc(v);
      return img.decode().catch(() => null);
    }));
    return page.videos.length;
  }

  function goTo(position) {
    const rows = Math.floor(Math.max(0, Math.min(position, state.total - 1)) / state.cols);
    const el = scroller();
    const content = Math.ceil(state.total / state.cols) * state.cellH;
    const spacer = Math.min(content, MAX_SPACER);
    let top = rows * state.cellH;
    if (content > MAX_SPACER) {
      top = top / Math.max(1, content - el.clientHeight) * (spacer - el.clientHeight);
    }
    el.scrollTop = top;
    render();
    return settle();
  }

  // ---- hover: a thumbnail plays a few frames of its clip ------------------

  function startHover(cell) {
    stopHover();
    const video = cell.video;
    if (!video || video.frames < 2) return;
    const side = state.info.thumb_side;
    const count = Math.min(HOVER_FRAMES, video.frames);
    const frames = [];
    for (let k = 0; k < count; k++) frames.push(Math.floor(k * video.frames / count));
    const images = frames.map((f) => {
      const img = new Image();
      img.src = frameUrl(video, f, side);
      return img;
    });
    const img = cell.querySelector('img');
    let k = 0;
    const hover = {cell: cell, timer: 0};
    const step = () => {
      if (state.hover !== hover) return;
      const next = images[k];
      if (next.complete && next.naturalWidth > 0) {
        img.src = next.src;
        img.dataset.frame = String(frames[k]);
        k = (k + 1) % images.length;
      }
      hover.timer = setTimeout(step, 1000 / fpsOf(video));
    };
    state.hover = hover;
    step();
  }

  function stopHover(cell) {
    const hover = state.hover;
    if (!hover || (cell && hover.cell !== cell)) return;
    clearTimeout(hover.timer);
    state.hover = null;
    const video = hover.cell.video;
    if (video && video.frames > 0 && !video.thumb_error) {
      const img = hover.cell.querySelector('img');
      img.src = thumbSrc(video);
      img.dataset.frame = String(middle(video));
    }
  }

  // ---- filter, split, charts ----------------------------------------------

  function showFilterError(text) {
    const el = $('filter-error');
    el.textContent = text || '';
    el.hidden = !text;
  }

  async function applySelection() {
    stopHover();
    showFilterError('');
    resetPages();
    scroller().scrollTop = 0;
    try {
      const start = 0;
      const page = await loadPage(start);
      if (page && page.error) setTotal(0);
    } finally {
      await settle();
    }
  }

  // Polls the charts until their count is done (one poll loop at a time;
  // a count the server finished is started again after a commit).
  let chartsPolling = false;
  function pollCharts() {
    if (chartsPolling) return;
    chartsPolling = true;
    pollChartsOnce();
  }

  async function pollChartsOnce() {
    let body;
    try {
      body = await api('charts');
    } catch (e) {
      chartsPolling = false;
      $('charts-note').textContent = 'charts: ' + e.message;
      return;
    }
    if (body.labels_svg) $('labels-chart').innerHTML = body.labels_svg;
    if (body.frames_svg) $('frames-chart').innerHTML = body.frames_svg;
    $('charts-note').textContent = body.error ? 'charts failed: ' + body.error
      : !body.running ? ''
        : body.scanned ? 'counting ' + body.scanned + ' of ' + body.total + ' videos…'
          : 'counting…';
    if (body.running) setTimeout(pollChartsOnce, 1000);
    else chartsPolling = false;
  }

  // ---- the video page -----------------------------------------------------

  const player = {video: null, frame: 0, images: new Map(), timer: 0, playing: false,
                  damaged: new Map()};

  function frameImage(frame) {
    let img = player.images.get(frame);
    if (!img) {
      img = new Image();
      img.src = frameUrl(player.video, frame, 0);
      img.ready = img.decode().then(() => true, () => false);
      player.images.set(frame, img);
    }
    return img;
  }

  function prefetch(from) {
    for (let f = from; f < Math.min(player.video.frames, from + 12); f++) frameImage(f);
  }

  async function showFrame(frame) {
    const video = player.video;
    if (!video || frame < 0 || frame >= video.frames) return;
    player.frame = frame;
    const img = frameImage(frame);
    prefetch(frame + 1);
    const ok = await img.ready;
    if (player.video !== video || player.frame !== frame) return;
    const error = $('player-error');
    if (ok) {
      $('player').src = img.src;
      error.hidden = true;
    } else {
      const text = player.damaged.get(frame) || await imageError(img.src);
      player.damaged.set(frame, text);
      markDamaged(frame, text);
      error.textContent = 'frame ' + frame + ' is damaged: ' + text;
      error.hidden = false;
    }
    $('player').dataset.frame = String(frame);
    $('frame-number').textContent = 'frame ' + frame + ' of 0-' + (video.frames - 1);
    $('scrub').value = String(frame);
    for (const el of $('strip').children) {
      el.classList.toggle('current', Number(el.dataset.frame) === frame);
    }
  }

  function setPlaying(playing) {
    player.playing = playing;
    $('play').textContent = playing ? 'pause' : 'play';
    clearTimeout(player.timer);
    if (!playing) return;
    // The frame on screen stays for its time; from the end, frame 0 comes at once.
    if (player.frame < 0) tick();
    else player.timer = setTimeout(tick, 1000 / (Number($('fps').value) || DEFAULT_FPS));
  }

  async function tick() {
    if (!player.playing) return;
    const video = player.video;
    const started = performance.now();
    let next = player.frame + 1;
    if (next >= video.frames) {
      setPlaying(false);
      return;
    }
    await showFrame(next);  // waits for the frame: frames play in order, none skipped
    if (!player.playing || player.video !== video) return;
    const fps = Number($('fps').value) || DEFAULT_FPS;
    const wait = Math.max(0, 1000 / fps - (performance.now() - started));
    player.timer = setTimeout(tick, wait);
  }

  function markDamaged(frame, text) {
    for (const el of $('strip').children) {
      if (Number(el.dataset.frame) === frame) {
        el.classList.add('damaged');
        el.title = 'damaged: ' + text;
      }
    }
  }

  function detailRow(name, value) {
    const tr = document.createElement('tr');
    const a = document.createElement('td');
    const b = document.createElement('td');
    a.textContent = name;
    b.textContent = value;
    tr.append(a, b);
    return tr;
  }

  async function openVideo(q) {
    setPlaying(false);
    $('video-page').hidden = false;
    $('v-title').textContent = '';
    $('player').removeAttribute('src');
    $('player-error').hidden = true;
    $('strip').textContent = '';
    $('v-details').textContent = '';
    $('v-meta').textContent = '';
    $('v-check').textContent = 'checking…';
    let video;
    try {
      video = await api('video', 'id=' + q);
    } catch (e) {
      player.video = null;
      $('v-title').textContent = q;
      $('player-error').textContent = e.message;
      $('player-error').hidden = false;
      $('v-check').textContent = '';
      return;
    }
    video.q = q;
    player.video = video;
    player.images = new Map();
    player.damaged = new Map();
    $('v-title').textContent = video.id;
    $('fps').value = String(fpsOf(video));
    $('scrub').max = String(Math.max(0, video.frames - 1));
    const details = $('v-details');
    details.append(detailRow('id', video.id), detailRow('frames', String(video.frames)),
                   detailRow('label', labelOf(video)), detailRow('codec', video.codec),
                   detailRow('chunk', String(video.chunk)),
                   detailRow('bytes', video.bytes.toLocaleString('en-US')),
                   detailRow('checksums', video.checksums ? 'CRC-32C per frame' : 'none'),
                   detailRow('insertion', String(video.seq)));
    if (video.codec === 'h264') details.append(detailRow('keyframes', String(video.keyframes)));
    try {
      $('v-meta').textContent = JSON.stringify(JSON.parse(video.meta), null, 2);
    } catch (e) {
      $('v-meta').textContent = video.meta;
    }
    const shown = Math.min(STRIP_MAX, video.frames);
    for (let k = 0; k < shown; k++) {
      const frame = Math.floor(k * video.frames / shown);
      const el = document.createElement('div');
      el.className = 'f';
      el.dataset.frame = String(frame);
      const img = document.createElement('img');
      img.alt = '';
      img.src = frameUrl(video, frame, 96);
      img.addEventListener('error', () => {
        imageError(img.src).then((text) => markDamaged(frame, text));
      });
      const label = document.createElement('span');
      label.textContent = String(frame);
      el.append(img, label);
      el.addEventListener('click', () => {
        setPlaying(false);
        showFrame(frame);
      });
      $('strip').appendChild(el);
    }
    if (video.frames > 0) showFrame(0);
    else $('frame-number').textContent = 'no frames';
    try {
      const check = await api('check', 'id=' + q);
      if (player.video !== video) return;
      const box = $('v-check');
      box.textContent = '';
      const line = document.createElement('div');
      if (check.healthy) {
        line.className = 'ok';
        line.textContent = 'all ' + check.frames + ' frames read and decoded' +
          (check.checksums ? ', CRC-32C matched' : ' (no checksums stored)') + ': healthy';
        box.appendChild(line);
      } else {
        for (const p of check.problems) {
          const bad = document.createElement('div');
          bad.className = 'bad';
          bad.textContent = (p.frame === null ? 'video' : 'frame ' + p.frame) + ': ' + p.what;
          box.appendChild(bad);
          if (p.frame !== null) markDamaged(p.frame, p.what);
        }
      }
    } catch (e) {
      $('v-check').textContent = 'check failed: ' + e.message;
    }
  }

  function closeVideo() {
    setPlaying(false);
    player.video = null;
    $('video-page').hidden = true;
  }

  function route() {
    const hash = location.hash.replace(/^#/, '');
    if (hash.startsWith('v=')) openVideo(hash.slice(2));
    else closeVideo();
  }

  // ---- start --------------------------------------------------------------

  async function start() {
    // The token was for this first request; the cookie carries it now.
    if (location.search) history.replaceState(null, '', '/' + location.hash);
    // The first page's ids are asked for at once, beside the dataset's info.
    const firstPage = loadPage(0);
    state.info = await api('info');
    const info = state.info;
    $('dataset').textContent = info.dir;
    document.title = 'gulpdb view: ' + info.dir;
    for (const s of info.splits) {
      const option = document.createElement('option');
      option.value = s.name;
      option.textContent = s.name + ' (' + s.count.toLocaleString('en-US') + ')';
      $('split').appendChild(option);
    }
    if (!info.splits.length) $('split').hidden = true;
    // The charts' panel takes its place now (filled after the first grid),
    // so that the grid does not reflow under the reader.
    $('side').hidden = window.innerWidth < 1200;
    await firstPage;
    setTotal(state.pages.has(0) && !state.pages.get(0).error ? state.total : info.videos);

    scroller().addEventListener('scroll', scheduleRender, {passive: true});
    window.addEventListener('resize', () => {
      geometry();
      scheduleRender();
    });
    $('filter-form').addEventListener('submit', (event) => {
      event.preventDefault();
      state.filter = $('filter').value.trim();
      applySelection();
    });
    $('clear').addEventListener('click', () => {
      $('filter').value = '';
      state.filter = '';
      applySelection();
    });
    $('refresh').addEventListener('click', () => {
      // Read the dataset again where the grid is (new commits show).
      showFilterError('');
      resetPages();
      settle();
      pollCharts();
    });
    $('split').addEventListener('change', () => {
      state.split = $('split').value;
      applySelection();
    });
    $('goto').addEventListener('change', () => goTo(Number($('goto').value) || 0));
    $('charts-toggle').addEventListener('click', () => {
      $('side').hidden = !$('side').hidden;
      geometry();
      scheduleRender();
      pollCharts();
    });
    $('labels-chart').addEventListener('click', (event) => {
      const bar = event.target.closest('g.bar');
      if (!bar) return;
      const value = bar.getAttribute('data-value');
      $('filter').value = info.label_key + '=' + value;
      state.filter = $('filter').value;
      applySelection();
    });
    $('play').addEventListener('click', () => {
      if (!player.video) return;
      if (!player.playing && player.frame >= player.video.frames - 1) player.frame = -1;
      setPlaying(!player.playing);
    });
    $('prev').addEventListener('click', () => {
      setPlaying(false);
      showFrame(player.frame - 1);
    });
    $('next').addEventListener('click', () => {
      setPlaying(false);
      showFrame(player.frame + 1);
    });
    $('scrub').addEventListener('input', () => {
      setPlaying(false);
      showFrame(Number($('scrub').value));
    });
    document.addEventListener('keydown', (event) => {
      if ($('video-page').hidden) return;
      if (event.key === 'Escape') location.hash = '';
      if (event.key === 'ArrowRight') $('next').click();
      if (event.key === 'ArrowLeft') $('prev').click();
      if (event.key === ' ' && event.target.tagName !== 'INPUT') {
        event.preventDefault();
        $('play').click();
      }
    });
    window.addEventListener('hashchange', route);

    // The first grid: the cells in view, and the first page's thumbnails
    // decoded (placeholders do not count).
    await Promise.all([settle(), decodePage(0)]);
    performance.mark('gulpdb-first-grid');
    route();
    // Charts after the first grid, never inside its budget.
    pollCharts();
  }

  window.gulpdbView = {
    ready: null,
    goTo: goTo,
    decodePage: decodePage,
    settle: settle,
    state: () => ({
      total: state.total,
      cols: state.cols,
      visible: state.cells.filter((c) => !c.hidden && c.video)
        .map((c) => ({position: Number(c.dataset.position), id: c.video.id})),
    }),
    player: () => ({frame: player.frame, playing: player.playing,
                    frames: player.video ? player.video.frames : 0}),
  };
  window.gulpdbView.ready = new Promise((resolve, reject) => {
    document.addEventListener('DOMContentLoaded', () => start().then(resolve, reject));
  });
})();
