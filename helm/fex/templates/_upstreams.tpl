{{/*
Upstreams: a model whose extracted tensors fex-server forwards to an Open
Inference Protocol (KServe v2) model server. `upstreams.<key>` belongs to
`models.<key>`; the chart renders the model's `upstream:` section from it
(the address from a Service name, the CA from a Secret mount), mounts the
CA, and opens egress to it when the NetworkPolicy restricts egress.
*/}}

{{/* The address fex-server dials: `address`, or http(s)://<service>.<namespace>.svc:<port>. */}}
{{- define "fex.upstreamAddress" -}}
{{- $u := .upstream }}
{{- if $u.address }}
{{- $u.address }}
{{- else }}
{{- $scheme := ternary "https" "http" (not (empty (($u.tls | default dict).secretName))) }}
{{- printf "%s://%s.%s.svc:%d" $scheme $u.service ($u.namespace | default .root.Release.Namespace) (int ($u.port | default 8001)) }}
{{- end }}
{{- end }}

{{/* Where an upstream's CA Secret is mounted. */}}
{{- define "fex.upstreamCAPath" -}}
{{- $tls := .upstream.tls }}
{{- printf "%s/%s" ($tls.mountPath | default (printf "/etc/fex/upstreams/%s" .key)) ($tls.key | default "ca.crt") }}
{{- end }}

{{/* The model config's `upstream:` section (fex's snake_case keys), as a dict. */}}
{{- define "fex.upstreamSection" -}}
{{- $u := .upstream }}
{{- $s := dict "address" (include "fex.upstreamAddress" .) "model" $u.model "inputs" $u.inputs }}
{{- with $u.tls }}
{{- if .secretName }}
{{- $tls := dict "ca" (include "fex.upstreamCAPath" $) }}
{{- with .domain }}{{ $_ := set $tls "domain" . }}{{ end }}
{{- $_ := set $s "tls" $tls }}
{{- end }}
{{- end }}
{{- with $u.version }}{{ $_ := set $s "version" (toString .) }}{{ end }}
{{- with $u.timeoutMs }}{{ $_ := set $s "timeout_ms" (int64 .) }}{{ end }}
{{- with $u.maxConnections }}{{ $_ := set $s "max_connections" (int64 .) }}{{ end }}
{{- with $u.outputs }}{{ $_ := set $s "outputs" . }}{{ end }}
{{- toYaml (dict "upstream" $s) }}
{{- end }}

{{/*
A model config with its `upstream:` section added: a map gets the key, a
string gets the section appended as YAML text (its comments kept). Refuses
a model that already has one.
*/}}
{{- define "fex.withUpstream" -}}
{{- $config := .config }}
{{- $parsed := $config }}
{{- if kindIs "string" $config }}{{ $parsed = fromYaml $config }}{{ end }}
{{- if hasKey $parsed "upstream" }}
{{- fail (printf "models.%s has an upstream: section and upstreams.%s sets one too; keep one of them" .key .key) }}
{{- end }}
{{- $section := include "fex.upstreamSection" . }}
{{- if kindIs "string" $config }}
{{- $text := printf "%s\n# From the chart's upstreams.%s.\n%s" ($config | trimSuffix "\n") .key $section }}
{{- $check := fromYaml $text }}
{{- if or (hasKey $check "Error") (not (hasKey $check "upstream")) }}
{{- fail (printf "models.%s: cannot append upstreams.%s to it (write it as a block mapping, or as a map)" .key .key) }}
{{- end }}
{{- $text }}
{{- else }}
{{- toYaml (merge (fromYaml $section) $config) }}
{{- end }}
{{- end }}

{{/* Refuses upstreams that have no model to belong to. */}}
{{- define "fex.checkUpstreams" -}}
{{- if and .Values.upstreams .Values.existingModelsConfigMap }}
{{- fail "upstreams needs the chart to render the models (existingModelsConfigMap is set): write upstream: into those configs yourself" }}
{{- end }}
{{- range $key, $u := .Values.upstreams }}
{{- if and $u (not (get $.Values.models $key)) }}
{{- fail (printf "upstreams.%s names no model: add models.%s (each upstream belongs to the model of the same key)" $key $key) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The non-null entries of .Values.upstreams whose CA comes from a Secret, as a dict. */}}
{{- define "fex.upstreamCAs" -}}
{{- $cas := dict }}
{{- range $key, $u := .Values.upstreams }}
{{- if and $u $u.tls }}
{{- if $u.tls.secretName }}
{{- $_ := set $cas $key $u }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $cas }}
{{- end }}

{{/* The port egress must allow to reach an upstream: the pods' port, after the Service. */}}
{{- define "fex.upstreamEgressPort" -}}
{{- $u := .upstream }}
{{- if $u.targetPort }}
{{- int $u.targetPort }}
{{- else if $u.address }}
{{- $u.address | trimSuffix "/" | splitList ":" | last | int }}
{{- else }}
{{- int ($u.port | default 8001) }}
{{- end }}
{{- end }}
