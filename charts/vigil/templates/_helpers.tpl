{{/* The chart name. */}}
{{- define "vigil.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name, the prefix of every object name: the release name when it
contains the chart name (release "vigil" gives "vigil", so objects are named
as in the kustomize install), else <release>-<chart>.
*/}}
{{- define "vigil.fullname" -}}
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

{{- define "vigil.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "vigil.labels" -}}
helm.sh/chart: {{ include "vigil.chart" . }}
{{ include "vigil.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: vigil
{{- end }}

{{/* Labels that select the manager's pods. */}}
{{- define "vigil.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vigil.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "vigil.managerSelectorLabels" -}}
{{ include "vigil.selectorLabels" . }}
app.kubernetes.io/component: manager
{{- end }}

{{/* The manager's ServiceAccount. */}}
{{- define "vigil.serviceAccountName" -}}
{{- printf "%s-manager" (include "vigil.fullname" .) }}
{{- end }}

{{/* The Service of the API, ping and badge port. */}}
{{- define "vigil.httpServiceName" -}}
{{- include "vigil.fullname" . }}
{{- end }}

{{- define "vigil.metricsServiceName" -}}
{{- printf "%s-metrics" (include "vigil.fullname" .) }}
{{- end }}

{{/* The subject every binding names: the manager's ServiceAccount. */}}
{{- define "vigil.subjects" -}}
subjects:
  - kind: ServiceAccount
    name: {{ include "vigil.serviceAccountName" . }}
    namespace: {{ .Release.Namespace }}
{{- end }}

{{/*
The base URL (--base-url): .Values.baseURL, else the first Ingress host
(https when a TLS entry names it), else the in-cluster Service.
*/}}
{{- define "vigil.baseURL" -}}
{{- if .Values.baseURL }}
{{- .Values.baseURL | trimSuffix "/" }}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts }}
{{- $host := (first .Values.ingress.hosts).host }}
{{- $scheme := "http" }}
{{- range .Values.ingress.tls }}
{{- if has $host (.hosts | default list) }}
{{- $scheme = "https" }}
{{- end }}
{{- end }}
{{- printf "%s://%s" $scheme $host }}
{{- else }}
{{- $port := .Values.service.port | int }}
{{- if eq $port 80 }}
{{- printf "http://%s.%s.svc" (include "vigil.httpServiceName" .) .Release.Namespace }}
{{- else }}
{{- printf "http://%s.%s.svc:%d" (include "vigil.httpServiceName" .) .Release.Namespace $port }}
{{- end }}
{{- end }}
{{- end }}

{{/* The metrics target's job label, for the PrometheusRule. */}}
{{- define "vigil.metricsJob" -}}
{{- .Values.prometheusRule.job | default (include "vigil.metricsServiceName" .) }}
{{- end }}

{{/* Where the store's volume is mounted; the SQLite file is vigil.db in it. */}}
{{- define "vigil.storeDir" -}}
/var/lib/vigil
{{- end }}

{{/*
Where store.postgres.caSecret's ca.crt is mounted in PostgreSQL mode; the
DSN's sslrootcert (or PGSSLROOTCERT, which the chart sets) names the file.
*/}}
{{- define "vigil.postgresCADir" -}}
/etc/vigil/postgres-ca
{{- end }}

{{/*
The manager's image: by digest when image.digest is set (a release's chart
pins it), else by tag.
*/}}
{{- define "vigil.image" -}}
{{- $ref := printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- if .Values.image.digest -}}
{{- $ref = printf "%s@%s" $ref .Values.image.digest -}}
{{- end -}}
{{ $ref }}
{{- end }}
