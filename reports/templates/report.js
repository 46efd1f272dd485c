(function () {
  // The data block must parse as JSON: a page whose data a machine cannot read says so in the console.
  var data = document.getElementById('data');
  if (data) {
    try { JSON.parse(data.textContent); } catch (e) { console.error('streamcheck: the data block is not JSON: ' + e); }
  }
  var bar = document.getElementById('filters');
  if (!bar || !document.querySelectorAll) return;
  bar.hidden = false;
  var q = document.getElementById('filter-text');
  var problems = document.getElementById('filter-problems');
  // Hidden under "only problems": passes, skips with their reason (counted by reason under Totals) and recorded
  // values; failures, tests not run and skips not judged stay.
  var good = {passed: 1, pass: 1, retired: 1, recorded: 1, skipped: 1};
  function apply() {
    var text = q.value.toLowerCase();
    var rows = document.querySelectorAll('tr[data-status]');
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var show = !(problems.checked && good[row.getAttribute('data-status')]) &&
                 (!text || row.textContent.toLowerCase().indexOf(text) >= 0);
      row.style.display = show ? '' : 'none';
      var next = row.nextElementSibling;
      if (next && next.className === 'tl-row') next.style.display = row.style.display;
    }
  }
  q.addEventListener('input', apply);
  problems.addEventListener('change', apply);
  function toggle(open) {
    var all = document.querySelectorAll('details.family');
    for (var i = 0; i < all.length; i++) all[i].open = open;
  }
  document.getElementById('expand-all').addEventListener('click', function () { toggle(true); });
  document.getElementById('collapse-all').addEventListener('click', function () { toggle(false); });
  // A link to a collapsed timeline (or into a collapsed family) opens it.
  function openTarget() {
    var target = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === 'DETAILS') node.open = true;
    }
    if (target && target.scrollIntoView) target.scrollIntoView();
  }
  window.addEventListener('hashchange', openTarget);
  openTarget();
})();
