{{- define "ratchet.name" -}}{{ .Release.Name }}{{- end -}}

{{- define "ratchet.labels" -}}
app.kubernetes.io/name: ratchet
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "ratchet.selector" -}}
app.kubernetes.io/name: ratchet
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
Every service Ratchet runs: its API group, plural and storage version. The one list the
rules and the admission webhooks below range over; crates/ratchet/tests/helm_chart.rs
holds the rendered chart to the operator's registry.
*/}}
{{- define "ratchet.services" -}}
- { group: cinder.openstack.c5c3.io, plural: cinders, version: v1beta1 }
- { group: ironic.openstack.c5c3.io, plural: ironics, version: v1alpha1 }
- { group: keystone.openstack.c5c3.io, plural: keystones, version: v1alpha1 }
- { group: glance.openstack.c5c3.io, plural: glances, version: v1alpha1 }
- { group: placement.openstack.c5c3.io, plural: placements, version: v1alpha1 }
- { group: nova.openstack.c5c3.io, plural: novas, version: v1alpha1 }
- { group: neutron.openstack.c5c3.io, plural: neutrons, version: v1alpha1 }
{{- end -}}

{{/* The rules the operator needs where it reconciles (docs/permissions.md). */}}
{{- define "ratchet.rules" -}}
{{- range (include "ratchet.services" . | fromYamlArray) }}
- apiGroups: [{{ .group | quote }}]
  resources: [{{ .plural | quote }}]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: [{{ .group | quote }}]
  resources: ["{{ .plural }}/status"]
  verbs: ["get", "patch", "update"]
{{- end }}
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
- apiGroups: ["apps"]
  resources: ["deployments", "statefulsets", "daemonsets"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
- apiGroups: [""]
  resources: ["configmaps", "services"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch", "create"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "delete"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}

{{/* The stored-version migration's cluster-wide rules (docs/permissions.md). */}}
{{- define "ratchet.storageRules" -}}
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions/status"]
  verbs: ["update"]
{{- range (include "ratchet.services" . | fromYamlArray) }}
- apiGroups: [{{ .group | quote }}]
  resources: [{{ .plural | quote }}]
  verbs: ["list", "update"]
{{- end }}
{{- end -}}
