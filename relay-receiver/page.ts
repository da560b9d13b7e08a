/** The relay receiver's page: recent deliveries, updated live over server-sent events. */
export const RELAY_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Relay receiver — Synthetic Healthcare Sandbox</title>
  <style>
    body { font: 14px/1.4 system-ui, sans-serif; margin: 2rem; color: #1d2330; }
    h1 { font-size: 1.3rem; margin: 0 0 .25rem; }
    p.note { color: #5b6475; margin: 0 0 1rem; }
    table { border-collapse: collapse; width: 100%; }
    th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #e3e6ec; vertical-align: top; }
    th { background: #f5f7fa; font-weight: 600; }
    td.ok { color: #17803d; } td.bad { color: #b42318; }
    code { font-size: 12px; }
    pre { margin: .4rem 0 0; max-height: 16rem; overflow: auto; background: #f5f7fa; padding: .5rem; }
    #status { font-size: 12px; color: #5b6475; }
  </style>
</head>
<body>
  <h1>Relay receiver</h1>
  <p class="note">Webhook deliveries as they arrive, signatures verified, duplicates marked. Synthetic data only. <span id="status">connecting…</span></p>
  <table>
    <thead><tr><th>Received</th><th>Delivery</th><th>Event</th><th>Signatures</th><th>Duplicate</th><th>Lag</th><th>Forwarded</th><th>Answered</th></tr></thead>
    <tbody id="rows"><tr id="empty"><td colspan="8">No deliveries yet. Trigger one: POST /v1/webhooks/trigger-mock-event</td></tr></tbody>
  </table>
  <script>
    const rows = document.getElementById('rows');
    const cell = (text, className) => { const td = document.createElement('td'); td.textContent = text; if (className) td.className = className; return td; };
    function show(record, atTop) {
      document.getElementById('empty')?.remove();
      const tr = document.createElement('tr');
      const delivery = cell('');
      const code = document.createElement('code'); code.textContent = record.delivery_id || '(none)'; delivery.append(code);
      const details = document.createElement('details'); const summary = document.createElement('summary'); summary.textContent = 'envelope';
      const pre = document.createElement('pre'); pre.textContent = JSON.stringify(record.envelope, null, 2); details.append(summary, pre); delivery.append(details);
      tr.append(
        cell(new Date(record.received_at).toLocaleTimeString()),
        delivery,
        cell(record.event || ''),
        cell(record.verified ? 'verified' : 'refused', record.verified ? 'ok' : 'bad'),
        cell(record.duplicate ? 'yes' : ''),
        cell(record.lag_seconds === null || record.lag_seconds <= 1 ? '' : record.lag_seconds + ' s late'),
        cell(record.forwarded ? (record.forwarded.status ?? record.forwarded.error) + ' ← ' + record.forwarded.url : ''),
        cell(String(record.answered), record.answered === 200 ? 'ok' : 'bad'),
      );
      if (atTop) rows.prepend(tr); else rows.append(tr);
    }
    fetch('deliveries').then((r) => r.json()).then(({ data }) => data.forEach((record) => show(record, false)));
    const stream = new EventSource('deliveries/stream');
    stream.onopen = () => { document.getElementById('status').textContent = 'live'; };
    stream.onerror = () => { document.getElementById('status').textContent = 'reconnecting…'; };
    stream.onmessage = (message) => show(JSON.parse(message.data), true);
  </script>
</body>
</html>`;
