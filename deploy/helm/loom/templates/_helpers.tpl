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

{{/* Name of the chart's NATS objects. */}}
{{- define "loom.natsName" -}}
{{- printf "%s-nats" (include "loom.fullname" .) -}}
{{- end -}}

{{/*
Refuses contradictory messaging values (values.schema.json says the same; this holds for an install that skips the
schema): an external NATS beside the chart's own, more stream copies than servers.
*/}}
{{- define "loom.checkMessaging" -}}
{{- if and .Values.nats.enabled .Values.messaging.nats.servers -}}
{{- fail "messaging.nats.servers names an external NATS: set nats.enabled to false to use it instead of the chart's own" -}}
{{- end -}}
{{- if and .Values.nats.enabled (gt (int .Values.messaging.stream.replicas) (int .Values.nats.replicas)) -}}
{{- fail (printf "messaging.stream.replicas (%d) exceeds nats.replicas (%d): a stream keeps each copy on a different server" (int .Values.messaging.stream.replicas) (int .Values.nats.replicas)) -}}
{{- end -}}
{{- end -}}

{{/* The executor's messaging items of an external NATS's Secret: loom.messaging.nats key suffix, item name, file name. */}}
{{- define "loom.externalNatsItems" -}}
{{- $items := .Values.messaging.nats.items -}}
{{- $all := list (list "TOKEN" $items.token "token") (list "CREDENTIALS" $items.credentials "credentials.creds") (list "TLS_CA" $items.tlsCa "ca.pem") (list "TLS_CERT" $items.tlsCert "cert.pem") (list "TLS_KEY" $items.tlsKey "key.pem") -}}
{{- $used := list -}}
{{- range $all -}}
{{- if index . 1 -}}{{- $used = append $used . -}}{{- end -}}
{{- end -}}
{{- toJson $used -}}
{{- end -}}

{{/*
The executor's environment for messaging: the chart's NATS (its Service, the token item of the credentials Secret), or
an external one (its URLs, the items of its Secret), and the stream and consumer settings that are set. Nothing
without NATS: the in-memory mode.
*/}}
{{- define "loom.messagingEnv" -}}
{{- $messaging := .Values.messaging -}}
{{- $external := and (not .Values.nats.enabled) $messaging.nats.servers -}}
{{- /* stream copies left empty: 3 on the chart's 3- or 5-server NATS (a server may be lost), 1 on its single server */}}
{{- if and .Values.nats.enabled (eq (toString $messaging.stream.replicas) "") }}
{{- $messaging = merge (dict "stream" (dict "replicas" (ternary 3 1 (ge (int .Values.nats.replicas) 3)))) $messaging }}
{{- end }}
{{- if .Values.nats.enabled }}
- name: LOOM_MESSAGING_NATS_SERVERS
  value: {{ printf "nats://%s:4222" (include "loom.natsName" .) | quote }}
- name: LOOM_MESSAGING_NATS_TOKEN_FILE
  value: /run/secrets/loom/nats-token
{{- else if $external }}
- name: LOOM_MESSAGING_NATS_SERVERS
  value: {{ $messaging.nats.servers | quote }}
{{- if $messaging.nats.existingSecret }}
{{- range include "loom.externalNatsItems" . | fromJsonArray }}
- name: LOOM_MESSAGING_NATS_{{ index . 0 }}_FILE
  value: /run/secrets/loom-messaging/{{ index . 2 }}
{{- end }}
{{- end }}
{{- end }}
{{- if or .Values.nats.enabled $external }}
{{- $settings := dict "STREAM_REPLICAS" $messaging.stream.replicas "STREAM_MAXAGEMS" $messaging.stream.maxAgeMs "STREAM_MAXBYTES" $messaging.stream.maxBytes "STREAM_DUPLICATEWINDOWMS" $messaging.stream.duplicateWindowMs "STREAM_KEEPPROCESSEDMS" $messaging.stream.keepProcessedMs "CONSUMER_ACKWAITMS" $messaging.consumer.ackWaitMs "CONSUMER_MAXDELIVER" $messaging.consumer.maxDeliver "CONSUMER_MAXACKPENDING" $messaging.consumer.maxAckPending -}}
{{- range $suffix, $value := $settings }}
{{- if ne (toString $value) "" }}
{{- /* numbers from YAML are float64 here: printed whole, never as 1e+09 */}}
{{- $number := or (kindIs "float64" $value) (kindIs "int64" $value) (kindIs "int" $value) }}
- name: LOOM_MESSAGING_{{ $suffix }}
  value: {{ ternary (printf "%d" (int64 $value)) (toString $value) $number | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* nats.conf of the chart's NATS servers: JetStream on the volume, the token from the Secret, a cluster when replicas > 1. */}}
{{- define "loom.natsConfig" -}}
{{- $nats := .Values.nats -}}
{{- $name := include "loom.natsName" . -}}
# loom's NATS (deploy/helm/loom/templates/nats.yaml); docs/operations.md says how to size it
server_name: $POD_NAME
port: 4222
http_port: 8222
max_payload: {{ $nats.maxPayload }}
jetstream {
  store_dir: /data
  max_file_store: {{ $nats.jetstream.maxFileStore }}
  {{- with $nats.jetstream.maxMemoryStore }}
  max_memory_store: {{ . }}
  {{- end }}
  # always: each message is written to disk (fsync) before its publish is answered (docs/operations.md, sync policy)
  sync_interval: {{ $nats.jetstream.syncInterval | quote }}
}
{{- if gt (int $nats.replicas) 1 }}
# the servers replicate streams among themselves; the NetworkPolicy admits only them to this port
cluster {
  name: {{ $name }}
  port: 6222
  routes: [
    {{- range $index := until (int $nats.replicas) }}
    nats://{{ $name }}-{{ $index }}.{{ $name }}-cluster:6222
    {{- end }}
  ]
}
{{- end }}
# authorization { token: "..." }: the item nats-auth.conf of the credentials Secret (NATS reads include
# paths relative to this file's directory)
include ../authorization/nats-auth.conf
{{- end -}}
