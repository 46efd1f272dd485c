(function () {
  // The data block must parse as JSON: a page whose data a machine cannot read says so in the console.
  var data = document.getElementById('data');
  if (data) {
    try { JSON.parse(data.textContent); } catch (e) { console.error('streamcheck: the data block is not JSON: ' + e); }
  }
  if (!document.querySelectorAll) return;
  var page = decodeURIComponent(location.pathname.split('/').pop()) || 'the page';

  // What a reader sees where a file beside the page is not there: the folder to copy with the page.
  function missing(file, what) {
    var folder = file.split('/')[0];
    var note = document.createElement('p');
    note.className = 'missing';
    note.textContent = what + ' in the folder ' + folder + '/ beside ' + page + ', which does not have ' + file +
      ': copy that folder with the page.';
    return note;
  }

  // A drawing's frame is loaded once its file is known to be there.
  function frames(cell) {
    var all = cell.querySelectorAll('iframe[data-src]');
    for (var i = 0; i < all.length; i++) probe(all[i]);
  }
  function probe(frame) {
    var src = frame.getAttribute('data-src');
    var img = new Image();
    img.onload = function () { frame.src = src; };
    img.onerror = function () { frame.parentNode.replaceChild(missing(src, 'This drawing is'), frame); };
    img.src = src;
  }

  // A file beside the page is a script that hands what it holds to a function of the page (Chromium runs a
  // script beside a page opened as a file, but fetches nothing): read() calls got(it) when the file's script
  // handed it under key, or lacking(a note) when the file is not there (what it holds: "what are in ...") or is
  // not of this page's report.
  var waiting = {};
  function handed(key, content) {
    var got = waiting[key];
    delete waiting[key];
    if (got) got(content);
  }
  function read(file, key, what, got, lacking) {
    var script = document.createElement('script');
    waiting[key] = got;
    script.onload = function () {
      script.parentNode.removeChild(script);
      if (!waiting[key]) return;
      delete waiting[key];
      lacking(document.createTextNode(file + ' holds nothing for this page: it is not of its report.'));
    };
    script.onerror = function () {
      script.parentNode.removeChild(script);
      delete waiting[key];
      lacking(missing(file, what + ' are'));
    };
    script.src = file;
    document.head.appendChild(script);
  }
  function show(cell, node) {
    cell.textContent = '';
    cell.appendChild(node);
  }

  // A test's details: details/<its row's id less "t-">.js, a script that hands them to streamcheckDetails().
  window.streamcheckDetails = function (details) { handed(details.row, details); };
  function load(row, cell, then) {
    var file = 'details/' + row.id.slice(2) + '.js';
    cell.textContent = 'reading ' + file + '\u2026';
    read(file, row.id, 'This test\'s details', function (details) {
      cell.innerHTML = details.html;
      frames(cell);
      if (then) then();
    }, function (note) { show(cell, note); });
  }

  // A family's rows: families/<its id less "f-">.js, a script that hands them to streamcheckFamily(), read
  // when the family is first opened; then() runs once they are in the page.
  var familyThen = {};
  window.streamcheckFamily = function (family) { handed(family.family, family); };
  function readFamily(family, then) {
    var state = family.getAttribute('data-rows');
    if (state === 'read' && then) then();
    if (state === 'reading' && then) familyThen[family.id].push(then);
    if (state) return;
    var body = family.querySelector('tbody');
    var file = 'families/' + family.id.slice(2) + '.js';
    var note = body.insertRow(0).insertCell(0);
    note.colSpan = 4;
    note.textContent = 'reading ' + file + '\u2026';
    family.setAttribute('data-rows', 'reading');
    familyThen[family.id] = then ? [then] : [];
    read(file, family.id, 'This family\'s tests', function (content) {
      body.innerHTML = content.html;
      var rows = body.querySelectorAll('tr[data-status]');
      for (var r = 0; r < rows.length; r++) rows[r].tabIndex = 0;
      family.setAttribute('data-rows', 'read');
      var thens = familyThen[family.id];
      delete familyThen[family.id];
      for (var t = 0; t < thens.length; t++) thens[t]();
    }, function (lack) {
      family.setAttribute('data-rows', 'lacking');
      show(note, lack);
    });
  }
  document.addEventListener('toggle', function (e) {
    if (e.target.open && e.target.matches('details.family')) readFamily(e.target);
  }, true);
  function open(row, then) {
    var next = row.nextElementSibling;
    row.classList.add('open');
    if (next && next.className === 'details-row') {
      next.hidden = false;
      if (then) then();
      return;
    }
    var tr = document.createElement('tr');
    var cell = tr.insertCell(0);
    tr.className = 'details-row';
    cell.colSpan = row.cells.length;
    row.parentNode.insertBefore(tr, next);
    load(row, cell, then);
  }
  function toggle(row) {
    if (row.classList.contains('open')) {
      row.classList.remove('open');
      row.nextElementSibling.hidden = true;
    } else {
      open(row);
    }
  }
  function testRow(node) {
    return node && node.closest ? node.closest('table.tests tr[data-status]') : null;
  }
  document.addEventListener('click', function (e) {
    var row = testRow(e.target);
    if (row && !e.target.closest('a')) toggle(row);
  });
  document.addEventListener('keydown', function (e) {
    if ((e.key === 'Enter' || e.key === ' ') && testRow(e.target) === e.target) {
      e.preventDefault();
      toggle(e.target);
    }
  });

  // A link to a test, to its timeline or into a collapsed family opens it; a test's row is in its family's
  // file (its family is the first dotted part of its name), its timeline in its details.
  function reveal(target) {
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === 'DETAILS') node.open = true;
      if (node.matches && node.matches('details.family')) readFamily(node);
    }
    if (target && target.scrollIntoView) target.scrollIntoView();
  }
  function openTarget() {
    var id = location.hash ? decodeURIComponent(location.hash.slice(1)) : '';
    var test = /^tl?-/.test(id) ? 't-' + id.replace(/^tl?-/, '') : '';
    var family = test && !document.getElementById(id) && document.getElementById('f-' + test.slice(2).split('.')[0]);
    if (family) {
      reveal(family);
      readFamily(family, openTest);
    } else {
      openTest();
    }
    function openTest() {
      var target = document.getElementById(id);
      var row = test && document.getElementById(test);
      reveal(target || row);
      if (row && (row === target || !target)) open(row, function () { reveal(document.getElementById(id)); });
    }
  }
  window.addEventListener('hashchange', openTarget);
  openTarget();

  var bar = document.getElementById('filters');
  if (!bar) return;
  bar.hidden = false;
  var q = document.getElementById('filter-text');
  var problems = document.getElementById('filter-problems');
  // Hidden under "only problems": passes, skips with their reason (counted by reason under Totals) and recorded
  // values; failures, tests not run and skips not judged stay.
  var good = {passed: 1, pass: 1, retired: 1, recorded: 1, skipped: 1};
  // While a filter is set, every family's rows are read, and the families (collapsed when the page opens) that
  // have a row to show are open.
  function apply() {
    var text = q.value.toLowerCase();
    if (text || problems.checked) {
      var unread = document.querySelectorAll('details.family:not([data-rows])');
      for (var u = 0; u < unread.length; u++) readFamily(unread[u], apply);
    }
    var rows = document.querySelectorAll('tr[data-status]');
    var shown = {};
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var show = !(problems.checked && good[row.getAttribute('data-status')]) &&
                 (!text || row.textContent.toLowerCase().indexOf(text) >= 0);
      row.style.display = show ? '' : 'none';
      var next = row.nextElementSibling;
      if (next && next.className === 'details-row') next.style.display = row.style.display;
      var family = show && row.closest('details.family');
      if (family) shown[family.id] = true;
    }
    if (!text && !problems.checked) return;
    var all = document.querySelectorAll('details.family[data-rows="read"]');
    for (var f = 0; f < all.length; f++) all[f].open = !!shown[all[f].id];
  }
  q.addEventListener('input', apply);
  problems.addEventListener('change', apply);
  function toggleAll(open) {
    var all = document.querySelectorAll('details.family');
    for (var i = 0; i < all.length; i++) all[i].open = open;
  }
  document.getElementById('expand-all').addEventListener('click', function () { toggleAll(true); });
  document.getElementById('collapse-all').addEventListener('click', function () { toggleAll(false); });
})();
