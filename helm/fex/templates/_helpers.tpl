{{/*
Names and labels.
*/}}
{{- define "fex.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "fex.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "fex.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "fex.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fex.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "fex.labels" -}}
helm.sh/chart: {{ include "fex.chart" . }}
{{ include "fex.selectorLabels" . }}
app.kubernetes.io/version: {{ (.Values.image.tag | default .Chart.AppVersion) | toString | trunc 63 | quote }}
app.kubernetes.io/component: server
app.kubernetes.io/part-of: fex
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "fex.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fex.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "fex.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}
{{- end }}

{{/*
Ports, taken from the server's listen addresses ("0.0.0.0:50051", "[::]:9090").
*/}}
{{- define "fex.grpcPort" -}}
{{- .Values.server.listenAddr | splitList ":" | last | int }}
{{- end }}

{{- define "fex.metricsEnabled" -}}
{{- if ne (toString .Values.server.metricsAddr) "off" }}true{{ end }}
{{- end }}

{{- define "fex.metricsPort" -}}
{{- .Values.server.metricsAddr | splitList ":" | last | int }}
{{- end }}

{{/*
A fex-server duration ("250ms", "5s", "2m", "20") in whole seconds, rounded up.
*/}}
{{- define "fex.durationSeconds" -}}
{{- $s := toString . }}
{{- if hasSuffix "ms" $s }}
{{- divf (trimSuffix "ms" $s | float64) 1000 | ceil | int }}
{{- else if hasSuffix "m" $s }}
{{- mulf (trimSuffix "m" $s | float64) 60 | ceil | int }}
{{- else }}
{{- trimSuffix "s" $s | float64 | ceil | int }}
{{- end }}
{{- end }}

{{/*
terminationGracePeriodSeconds: the preStop sleep, then the whole drain
deadline, then a margin, so the kubelet's SIGKILL never cuts a drain short.
*/}}
{{- define "fex.terminationGracePeriodSeconds" -}}
{{- $drain := include "fex.durationSeconds" .Values.server.drainTimeout | int }}
{{- add .Values.shutdown.preStopSleepSeconds $drain .Values.shutdown.graceMarginSeconds }}
{{- end }}

{{/*
Models: the ConfigMap (the chart's, or an existing one) mounted at modelsDir.
*/}}
{{- define "fex.modelsConfigMap" -}}
{{- if .Values.existingModelsConfigMap }}
{{- .Values.existingModelsConfigMap }}
{{- else }}
{{- printf "%s-models" (include "fex.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* The non-null entries of .Values.models, as a dict, each with the
`upstream:` section of its `upstreams` entry (_upstreams.tpl). */}}
{{- define "fex.modelConfigs" -}}
{{- include "fex.checkUpstreams" . }}
{{- $models := dict }}
{{- range $key, $config := .Values.models }}
{{- if $config }}
{{- $upstream := get ($.Values.upstreams | default dict) $key }}
{{- if $upstream }}
{{- $config = include "fex.withUpstream" (dict "root" $ "key" $key "config" $config "upstream" $upstream) }}
{{- if not (kindIs "string" (get $.Values.models $key)) }}{{ $config = fromYaml $config }}{{ end }}
{{- end }}
{{- $_ := set $models $key $config }}
{{- end }}
{{- end }}
{{- toYaml $models }}
{{- end }}

{{/* "true" when the server gets --models (from `models` or an existing ConfigMap). */}}
{{- define "fex.hasModels" -}}
{{- if or .Values.existingModelsConfigMap (include "fex.modelConfigs" . | fromYaml) }}true{{ end }}
{{- end }}

{{/* The first model's `name:` field, for NOTES.txt ("default" when none). */}}
{{- define "fex.firstModelName" -}}
{{- $configs := include "fex.modelConfigs" . | fromYaml }}
{{- $keys := keys $configs | sortAlpha }}
{{- if $keys }}
{{- $key := first $keys }}
{{- $config := get $configs $key }}
{{- if kindIs "string" $config }}{{ $config = fromYaml $config }}{{ end }}
{{- get $config "name" | default $key }}
{{- else }}default{{ end }}
{{- end }}

{{/*
fex-server's command-line flags, one per line of a YAML list. Each maps onto
one value; scripts/helm_test.sh runs the built binary with them.
*/}}
{{- define "fex.args" -}}
{{- $s := .Values.server }}
{{- if lt ($s.maxInFlightBytes | int64) ($s.maxRequestBytes | int64) }}
{{- fail (printf "server.maxInFlightBytes (%d) is below server.maxRequestBytes (%d): a request at the limit could never be admitted" ($s.maxInFlightBytes | int64) ($s.maxRequestBytes | int64)) }}
{{- end }}
- {{ printf "--listen-addr=%s" $s.listenAddr | quote }}
- {{ printf "--metrics-addr=%s" $s.metricsAddr | quote }}
{{- if eq (include "fex.hasModels" .) "true" }}
- {{ printf "--models=%s" .Values.modelsDir | quote }}
{{- end }}
- {{ printf "--reload-interval=%s" (toString $s.reloadInterval) | quote }}
- {{ printf "--max-request-bytes=%d" ($s.maxRequestBytes | int64) | quote }}
- {{ printf "--max-response-bytes=%d" ($s.maxResponseBytes | int64) | quote }}
- {{ printf "--max-concurrency=%d" ($s.maxConcurrency | int64) | quote }}
- {{ printf "--max-in-flight-bytes=%d" ($s.maxInFlightBytes | int64) | quote }}
- {{ printf "--prefault-heap-bytes=%d" ($s.prefaultHeapBytes | int64) | quote }}
{{- if not (kindIs "invalid" $s.extractThreads) }}
- {{ printf "--extract-threads=%d" ($s.extractThreads | int64) | quote }}
{{- end }}
{{- if not (kindIs "invalid" $s.ioThreads) }}
- {{ printf "--io-threads=%d" ($s.ioThreads | int64) | quote }}
{{- end }}
- {{ printf "--max-queue=%d" ($s.maxQueue | int64) | quote }}
- {{ printf "--http2-stream-window=%d" ($s.http2StreamWindow | int64) | quote }}
- {{ printf "--http2-connection-window=%d" ($s.http2ConnectionWindow | int64) | quote }}
- {{ printf "--http2-max-frame-size=%d" ($s.http2MaxFrameSize | int64) | quote }}
- {{ printf "--request-timeout=%s" (toString $s.requestTimeout) | quote }}
- {{ printf "--drain-timeout=%s" (toString $s.drainTimeout) | quote }}
{{- with .Values.tls }}
{{- if .enabled }}
- {{ printf "--health-addr=0.0.0.0:%d" (.healthPort | int) | quote }}
- {{ printf "--tls-cert=%s/%s" .mountPath .certKey | quote }}
- {{ printf "--tls-key=%s/%s" .mountPath .keyKey | quote }}
{{- if .clientCA.enabled }}
- {{ printf "--tls-client-ca=%s/%s" .clientCA.mountPath .clientCA.key | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.requestLog }}
{{- if .enabled }}
- {{ printf "--request-log=%s" .mountPath | quote }}
- {{ printf "--request-log-max-file-bytes=%d" (.maxFileBytes | int64) | quote }}
- {{ printf "--request-log-max-age=%s" (toString .maxAge) | quote }}
- {{ printf "--request-log-max-total-bytes=%d" (.maxTotalBytes | int64) | quote }}
{{- end }}
{{- $kafka := .kafka | default dict }}
{{- if $kafka.brokers }}
- {{ printf "--request-log-kafka=%s" $kafka.brokers | quote }}
- {{ printf "--request-log-kafka-topic=%s" $kafka.topic | quote }}
{{- end }}
{{- if or .enabled $kafka.brokers }}
- {{ printf "--request-log-sample=%v" .sample | quote }}
- {{ printf "--request-log-queue=%d" (.queue | int64) | quote }}
{{- end }}
{{- end }}
- {{ printf "--log-format=%s" $s.logFormat | quote }}
- {{ printf "--log=%s" $s.log | quote }}
{{- range $s.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/* A probe's handler: native gRPC on the gRPC port, or with TLS on the
plaintext health-only port (kubelet gRPC probes cannot speak TLS). */}}
{{- define "fex.probeHandler" -}}
{{- if .root.Values.tls.enabled }}
grpc:
  port: {{ .root.Values.tls.healthPort | int }}
  service: {{ .probe.service | quote }}
{{- else }}
grpc:
  port: {{ include "fex.grpcPort" .root }}
  service: {{ .probe.service | quote }}
{{- end }}
{{- end }}

{{- define "fex.podAntiAffinity" -}}
{{- $term := dict "labelSelector" (dict "matchLabels" (include "fex.selectorLabels" . | fromYaml)) "topologyKey" "kubernetes.io/hostname" }}
{{- if eq .Values.podAntiAffinityPreset "hard" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    {{- toYaml (list $term) | nindent 4 }}
{{- else if eq .Values.podAntiAffinityPreset "soft" }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        {{- toYaml $term | nindent 8 }}
{{- end }}
{{- end }}
