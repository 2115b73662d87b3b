{{/* Name of the release's objects: <release>-loom, or the release name when it holds "loom". */}}
{{- define "loom.fullname" -}}
{{- if contains "loom" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-loom" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "loom.labels" -}}
app.kubernetes.io/name: loom
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "executor"). */}}
{{- define "loom.selectorLabels" -}}
app.kubernetes.io/name: loom
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "loom.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- define "loom.secretName" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-credentials" (include "loom.fullname" .)) -}}
{{- end -}}

{{/*
The six services: gRPC service name, which identities call them (whose tokens they must know), and whether they call
others (then they present a token of their own). Mirrors deploy/compose/docker-compose.yml.
*/}}
{{- define "loom.topology" -}}
config-store:
  grpcService: loom.v1.WorkflowStore
  callers: [scheduler, executor, secrets]
  callsOthers: true
scheduler:
  grpcService: loom.v1.Scheduler
  callers: []
  callsOthers: true
executor:
  grpcService: loom.v1.Executor
  callers: [scheduler]
  callsOthers: true
secrets:
  grpcService: loom.v1.Secrets
  callers: [config-store, executor]
  callsOthers: true
skill-gateway:
  grpcService: loom.v1.SkillGateway
  callers: [executor]
  callsOthers: true
audit:
  grpcService: loom.v1.Audit
  callers: [executor, config-store, secrets, scheduler, skill-gateway]
  callsOthers: false
{{- end -}}

{{/* The loom.yaml of the ConfigMap: where each service is, telemetry, then .Values.config. */}}
{{- define "loom.configYaml" -}}
{{- $fullname := include "loom.fullname" . -}}
{{- $addresses := dict -}}
{{- range $name, $_ := include "loom.topology" . | fromYaml -}}
{{- $_ := set $addresses $name (dict "address" (printf "%s-%s:%d" $fullname $name (int $.Values.grpcPort))) -}}
{{- end -}}
{{- $telemetry := dict "prometheus" (dict "port" (int .Values.telemetry.prometheusPort)) -}}
{{- if .Values.telemetry.otlpEndpoint -}}
{{- $_ := set $telemetry "otlp" (dict "endpoint" .Values.telemetry.otlpEndpoint) -}}
{{- end -}}
{{- $base := dict "server" (dict "host" "0.0.0.0" "port" (int .Values.grpcPort)) "loom" (dict "services" $addresses "telemetry" $telemetry) -}}
{{- mergeOverwrite $base (deepCopy .Values.config) | toYaml -}}
{{- end -}}
