{{/* The chart's name, at most 63 characters (a label value). */}}
{{- define "pyscheduler.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object names: the release name, or release-chart when the release name does not contain
the chart's (so `helm install pyscheduler` names everything as manifests/ does). */}}
{{- define "pyscheduler.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "pyscheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pyscheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "pyscheduler.labels" -}}
{{ include "pyscheduler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "pyscheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pyscheduler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: the existing ServiceAccount to run as (serviceAccount.create is false)" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "pyscheduler.leaseName" -}}
{{- default (include "pyscheduler.fullname" .) .Values.leaderElection.resourceName }}
{{- end }}

{{- define "pyscheduler.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.resourceNamespace }}
{{- end }}

{{- define "pyscheduler.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The KubeSchedulerConfiguration the scheduler reads: config's fields, then the chart's
leaderElection and profiles (which win). */}}
{{- define "pyscheduler.config" -}}
{{- $le := dict "leaderElect" .Values.leaderElection.enabled "resourceLock" "leases" }}
{{- $_ := set $le "resourceName" (include "pyscheduler.leaseName" .) }}
{{- $_ = set $le "resourceNamespace" (include "pyscheduler.leaseNamespace" .) }}
{{- $_ = set $le "leaseDuration" .Values.leaderElection.leaseDuration }}
{{- $_ = set $le "renewDeadline" .Values.leaderElection.renewDeadline }}
{{- $_ = set $le "retryPeriod" .Values.leaderElection.retryPeriod }}
{{- $cfg := deepCopy (default dict .Values.config) }}
{{- $_ = set $cfg "apiVersion" "kubescheduler.config.k8s.io/v1" }}
{{- $_ = set $cfg "kind" "KubeSchedulerConfiguration" }}
{{- $_ = set $cfg "leaderElection" $le }}
{{- $_ = set $cfg "profiles" .Values.profiles }}
{{- toYaml $cfg }}
{{- end }}
