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

  // A test's details: details/<its row's id less "t-">.js, a script that hands them to streamcheckDetails().
  var waiting = {};
  window.streamcheckDetails = function (details) {
    var wait = waiting[details.row];
    if (!wait) return;
    delete waiting[details.row];
    wait.cell.innerHTML = details.html;
    frames(wait.cell);
    if (wait.then) wait.then();
  };
  function load(row, cell, then) {
    var file = 'details/' + row.id.slice(2) + '.js';
    var script = document.createElement('script');
    waiting[row.id] = {cell: cell, then: then};
    cell.textContent = 'reading ' + file + '\u2026';
    script.onload = function () {
      script.parentNode.removeChild(script);
      if (!waiting[row.id]) return;
      delete waiting[row.id];
      cell.textContent = file + ' holds no details of this test: it is not of this page\'s report.';
    };
    script.onerror = function () {
      script.parentNode.removeChild(script);
      delete waiting[row.id];
      cell.textContent = '';
      cell.appendChild(missing(file, 'This test\'s details are'));
    };
    script.src = file;
    document.head.appendChild(script);
  }
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
  var rows = document.querySelectorAll('table.tests tr[data-status]');
  for (var r = 0; r < rows.length; r++) rows[r].tabIndex = 0;
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

  // A link to a test, to its timeline or into a collapsed family opens it; a test's timeline is in its details.
  function reveal(target) {
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === 'DETAILS') node.open = true;
    }
    if (target && target.scrollIntoView) target.scrollIntoView();
  }
  function openTarget() {
    var id = location.hash ? decodeURIComponent(location.hash.slice(1)) : '';
    var target = id && document.getElementById(id);
    var row = testRow(target) === target ? target : null;
    if (!target && id.indexOf('tl-') === 0) row = document.getElementById('t-' + id.slice(3));
    reveal(target || row);
    if (row) open(row, function () { reveal(document.getElementById(id)); });
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
  // While a filter is set, the families (collapsed when the page opens) that have a row to show are open.
  function apply() {
    var text = q.value.toLowerCase();
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
    var all = document.querySelectorAll('details.family');
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
