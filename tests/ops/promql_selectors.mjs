// The metric selectors and grouping labels of PromQL expressions (a JSON array of strings on
// stdin), parsed with Prometheus's own lezer grammar. Used by ops_support.parse_promql.
import { parser } from '@prometheus-io/lezer-promql';
import { readFileSync } from 'node:fs';

const exprs = JSON.parse(readFileSync(0, 'utf8'));
const unquote = (s) => JSON.parse(s.startsWith("'") ? '"' + s.slice(1, -1) + '"' : s.startsWith('`') ? JSON.stringify(s.slice(1, -1)) : s);
const out = exprs.map((src) => {
  const tree = parser.parse(src);
  const selectors = [], grouping = [], errors = [];
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(node.from);
      if (node.name === 'VectorSelector') {
        const sel = { metric: null, matchers: [] };
        const c = node.node.cursor();
        c.iterate((n) => {
          if (n.name === 'Identifier' && sel.metric === null && n.node.parent.name === 'VectorSelector') {
            sel.metric = src.slice(n.from, n.to);
          }
          if (n.name === 'UnquotedLabelMatcher' || n.name === 'QuotedLabelMatcher') {
            const m = n.node;
            const name = m.getChild('LabelName') || m.getChild('QuotedLabelName');
            const op = m.getChild('MatchOp');
            const val = m.getChild('StringLiteral');
            const label = src.slice(name.from, name.to);
            sel.matchers.push({ label, op: src.slice(op.from, op.to), value: unquote(src.slice(val.from, val.to)) });
          }
        });
        const byName = sel.matchers.find((m) => m.label === '__name__' && m.op === '=');
        if (sel.metric === null && byName) sel.metric = byName.value;
        selectors.push(sel);
        return false;
      }
      if (node.name === 'GroupingLabels') {
        const c = node.node.cursor();
        c.iterate((n) => { if (n.name === 'LabelName') grouping.push(src.slice(n.from, n.to)); });
      }
    },
  });
  return { selectors, grouping, errors };
});
process.stdout.write(JSON.stringify(out));
