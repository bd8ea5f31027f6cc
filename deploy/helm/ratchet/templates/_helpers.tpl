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

{{/* The rules the operator needs where it reconciles (docs/permissions.md). */}}
{{- define "ratchet.rules" -}}
- apiGroups: ["cinder.openstack.c5c3.io"]
  resources: ["cinders"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["cinder.openstack.c5c3.io"]
  resources: ["cinders/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["ironic.openstack.c5c3.io"]
  resources: ["ironics"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["ironic.openstack.c5c3.io"]
  resources: ["ironics/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["keystone.openstack.c5c3.io"]
  resources: ["keystones"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["keystone.openstack.c5c3.io"]
  resources: ["keystones/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["glance.openstack.c5c3.io"]
  resources: ["glances"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["glance.openstack.c5c3.io"]
  resources: ["glances/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
- apiGroups: ["apps"]
  resources: ["deployments", "statefulsets"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
- apiGroups: [""]
  resources: ["configmaps", "services"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "create"]
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
- apiGroups: ["cinder.openstack.c5c3.io"]
  resources: ["cinders"]
  verbs: ["list", "update"]
- apiGroups: ["ironic.openstack.c5c3.io"]
  resources: ["ironics"]
  verbs: ["list", "update"]
- apiGroups: ["keystone.openstack.c5c3.io"]
  resources: ["keystones"]
  verbs: ["list", "update"]
- apiGroups: ["glance.openstack.c5c3.io"]
  resources: ["glances"]
  verbs: ["list", "update"]
{{- end -}}
