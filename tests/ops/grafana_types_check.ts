// Head of the generated dashboard type check (ops_support.dashboard_typescript appends the
// dashboard JSON and its panels as literals of these types).
import type { Dashboard } from "@grafana/schema/dist/esm/raw/dashboard/x/Dashboard_types.gen";
import type * as Stat from "@grafana/schema/dist/esm/raw/composable/stat/panelcfg/x/StatPanelCfg_types.gen";
import type * as TimeSeries from "@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen";
import type * as BarGauge from "@grafana/schema/dist/esm/raw/composable/bargauge/panelcfg/x/BarGaugePanelCfg_types.gen";
import type * as Table from "@grafana/schema/dist/esm/raw/composable/table/panelcfg/x/TablePanelCfg_types.gen";

// A JSON file spells Grafana's string enums as their values ("absolute", not
// ThresholdsMode.Absolute): accept exactly those values, keep everything else as typed.
type Json<T> = T extends string
  ? `${T}`
  : T extends number | boolean | null | undefined
    ? T
    : T extends ReadonlyArray<infer U>
      ? Array<Json<U>>
      : T extends object
        ? { [K in keyof T]: Json<T[K]> }
        : T;
// Grafana fills in options a file leaves out; what the file does say must be valid.
type Partially<T> = T extends ReadonlyArray<infer U>
  ? Array<Partially<U>>
  : T extends object
    ? { [K in keyof T]?: Partially<T[K]> }
    : T;

// The Prometheus query model Grafana saves in a panel's targets.
interface PrometheusQuery {
  refId: string;
  datasource?: { type?: string; uid?: string };
  expr: string;
  legendFormat?: string;
  instant?: boolean;
  range?: boolean;
  format?: "time_series" | "table" | "heatmap";
  editorMode?: "code" | "builder";
  interval?: string;
  hide?: boolean;
  exemplar?: boolean;
}
type Options<O, F> = { options?: Partially<Json<O>>; custom?: Partially<Json<F>> };
