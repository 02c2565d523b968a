{{/* The chart name, overridable with nameOverride. */}}
{{- define "autoresearch-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object's name: the release name, followed by the chart
name unless the release name already holds it.
*/}}
{{- define "autoresearch-operator.fullname" -}}
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

{{- define "autoresearch-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "autoresearch-operator.labels" -}}
helm.sh/chart: {{ include "autoresearch-operator.chart" . }}
{{ include "autoresearch-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selects the manager's pods; never change it in an upgrade. */}}
{{- define "autoresearch-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "autoresearch-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: controller-manager
{{- end }}

{{- define "autoresearch-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (printf "%s-controller-manager" (include "autoresearch-operator.fullname" .)) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The operator's image. The manager also runs its git and compliance steps in
it, so the Deployment passes the same reference in AUTORESEARCH_IMAGE.
*/}}
{{- define "autoresearch-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Whether the metrics endpoint checks its clients' tokens. */}}
{{- define "autoresearch-operator.secureMetrics" -}}
{{- if and .Values.metrics.enabled .Values.metrics.secure }}true{{ end }}
{{- end }}

{{/*
The namespaces whose Researcher pods get the egress policy, as a JSON list:
those named, else the watched ones, else the release namespace.
*/}}
{{- define "autoresearch-operator.researcherNamespaces" -}}
{{- .Values.networkPolicy.researcher.namespaces | default .Values.watchNamespaces | default (list .Release.Namespace) | toJson }}
{{- end }}
