{{/*
The manager's pod template, shared by the StatefulSet (the embedded ping
store, store.postgres.existingSecret empty) and the Deployment (PostgreSQL
mode). Only the store's flags, environment and volumes and the default
affinity differ.
*/}}
{{- define "vigil.podTemplate" -}}
{{- $hb := .Values.heartbeat }}
{{- $store := .Values.store.embedded }}
{{- $pg := .Values.store.postgres }}
{{- range $name := list "statusWritesPerSecond" "statusChangesPerSecond" }}
{{- if not (gt (float64 (get $.Values $name)) 0.0) }}
{{- fail (printf "%s must be a number above 0, not %v" $name (get $.Values $name)) }}
{{- end }}
{{- end -}}
metadata:
  {{- with .Values.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  labels:
    {{- include "vigil.labels" . | nindent 4 }}
    app.kubernetes.io/component: manager
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "vigil.serviceAccountName" . }}
  # The manager needs its token to reach the API server.
  automountServiceAccountToken: true
  terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds | int }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . | quote }}
  {{- end }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: manager
      image: {{ include "vigil.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        - manager
        {{- if $pg.existingSecret }}
        # One replica at a time runs the controllers, deadlines, status and
        # notifications: the holder of the Lease vigil.monitoring.vigil.dev
        # in the release namespace. Every replica serves pings and the API.
        - --leader-elect=true
        {{- else }}
        # One replica needs no leader election: the StatefulSet runs at
        # most one pod, and a lease lost while the API server is down
        # (over 15 s) would stop the manager and the pings it takes then.
        - --leader-elect=false
        {{- end }}
        - --http-bind-address=:8000
        - --metrics-bind-address=:8443
        - --health-probe-bind-address=:8081
        {{- if not $pg.existingSecret }}
        - --store=sqlite:{{ include "vigil.storeDir" . }}/vigil.db
        {{- end }}
        - --status-writes-per-second={{ .Values.statusWritesPerSecond }}
        - --status-changes-per-second={{ .Values.statusChangesPerSecond }}
        - {{ printf "--base-url=%s" (include "vigil.baseURL" .) | quote }}
        {{- with .Values.watchNamespaces }}
        - {{ printf "--namespaces=%s" (join "," .) | quote }}
        {{- end }}
        - --check-limit={{ .Values.checkLimit | int64 }}
        - --ping-log-limit={{ .Values.pingLogLimit | int64 }}
        - --flip-limit={{ .Values.flipLimit | int64 }}
        - --body-bytes-limit={{ .Values.bodyBytesLimit | int64 }}
        - --project-secret-limit={{ .Values.projectSecretLimit | int64 }}
        - --api-key-limit={{ .Values.apiKeyLimit | int64 }}
        - --channel-limit={{ .Values.channelLimit | int64 }}
        - --maintenance-window-limit={{ .Values.maintenanceWindowLimit | int64 }}
        - --status-page-limit={{ .Values.statusPageLimit | int64 }}
        - --cronjob-policy-limit={{ .Values.cronJobPolicyLimit | int64 }}
        - --limits-configmap={{ .Release.Namespace }}/{{ include "vigil.fullname" . }}-limits
        - --ping-body-limit={{ .Values.pingBodyLimit | int64 }}
        - --max-connections={{ .Values.maxConnections | int64 }}
        - --max-connections-per-source={{ .Values.maxConnectionsPerSource | int64 }}
        - --ipv6-source-prefix={{ .Values.ipv6SourcePrefix | int64 }}
        - --request-body-budget={{ .Values.requestBodyBudget | int64 }}
        - --check-write-slots={{ .Values.checkWriteSlots | int64 }}
        - --check-writes-waiting={{ .Values.checkWritesWaiting | int64 }}
        {{- with .Values.trustedProxies }}
        - {{ printf "--trusted-proxies=%s" (join "," .) | quote }}
        {{- end }}
        {{- if .Values.smtp.enabled }}
        - --smtp-bind-address=:{{ .Values.smtp.port | int }}
        {{- with .Values.smtp.domain }}
        - {{ printf "--smtp-domain=%s" . | quote }}
        {{- end }}
        - --smtp-max-connections-per-source={{ .Values.smtp.maxConnectionsPerSource | int64 }}
        {{- end }}
        {{- if .Values.cronJobs.enabled }}
        - {{ printf "--cronjob-time-zone=%s" .Values.cronJobs.timeZone | quote }}
        {{- else }}
        - --cronjobs=false
        {{- end }}
        - --notify-max-attempts={{ .Values.notify.maxAttempts | int64 }}
        - --notify-workers={{ .Values.notify.workers | int64 }}
        - --flap-limit={{ .Values.notify.flapLimit | int64 }}
        - {{ printf "--flap-window=%s" .Values.notify.flapWindow | quote }}
        - {{ printf "--flap-steady=%s" .Values.notify.flapSteady | quote }}
        - --storm-threshold={{ .Values.notify.stormThreshold | int64 }}
        - {{ printf "--storm-window=%s" .Values.notify.stormWindow | quote }}
        - {{ printf "--storm-gather=%s" .Values.notify.stormGather | quote }}
        {{- with .Values.notify.namespaceWorkers }}
        - --notify-namespace-workers={{ . | int64 }}
        {{- end }}
        {{- if .Values.notify.channelSecretsRequireLabel }}
        - --channel-secrets-require-label=true
        {{- end }}
        {{- with .Values.notify.egressAllow }}
        - {{ printf "--egress-allow=%s" (join "," .) | quote }}
        {{- end }}
        {{- if .Values.notify.egressAllowRelays }}
        - --egress-allow-relays=true
        {{- end }}
        {{- with .Values.notify.egressDeny }}
        - {{ printf "--egress-deny=%s" (join "," .) | quote }}
        {{- end }}
        - {{ printf "--zap-log-level=%v" .Values.logLevel | quote }}
        {{- if $hb.url }}
        - {{ printf "--heartbeat-url=%s" $hb.url | quote }}
        {{- end }}
        {{- if and (or $hb.url $hb.existingSecret) $hb.interval }}
        - {{ printf "--heartbeat-interval=%s" $hb.interval | quote }}
        {{- end }}
        {{- with .Values.dashboard.oidc }}
        {{- if .issuerURL }}
        - {{ printf "--oidc-issuer-url=%s" .issuerURL | quote }}
        - {{ printf "--oidc-client-id=%s" .clientID | quote }}
        {{- with .redirectURL }}
        - {{ printf "--oidc-redirect-url=%s" . | quote }}
        {{- end }}
        - {{ printf "--oidc-scopes=%s" (join "," .scopes) | quote }}
        - {{ printf "--oidc-username-claim=%s" .usernameClaim | quote }}
        - {{ printf "--oidc-groups-claim=%s" .groupsClaim | quote }}
        {{- with .usernamePrefix }}
        - {{ printf "--oidc-username-prefix=%s" . | quote }}
        {{- end }}
        {{- with .groupsPrefix }}
        - {{ printf "--oidc-groups-prefix=%s" . | quote }}
        {{- end }}
        {{- with .sessionTTL }}
        - {{ printf "--oidc-session-ttl=%s" . | quote }}
        {{- end }}
        {{- if not $.Values.dashboard.keySignIn }}
        - --dashboard-key-sign-in=false
        {{- end }}
        {{- end }}
        {{- end }}
        {{- range .Values.extraArgs }}
        - {{ . | quote }}
        {{- end }}
      env:
        # The manager's own namespace.
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        {{- if $pg.existingSecret }}
        # --store defaults to $VIGIL_STORE: the PostgreSQL URL, password
        # included, from the Secret store.postgres.existingSecret.
        - name: VIGIL_STORE
          valueFrom:
            secretKeyRef:
              name: {{ $pg.existingSecret | quote }}
              key: {{ $pg.secretKey | quote }}
        {{- if $pg.caSecret }}
        # Verify the server against the CA of store.postgres.caSecret. These
        # are libpq's defaults: sslmode and sslrootcert in the URL win.
        - name: PGSSLMODE
          value: verify-full
        - name: PGSSLROOTCERT
          value: {{ include "vigil.postgresCADir" . }}/ca.crt
        {{- end }}
        {{- end }}
        {{- if and $hb.existingSecret (not $hb.url) }}
        # Read by the manager when --heartbeat-url is empty.
        - name: VIGIL_HEARTBEAT_URL
          valueFrom:
            secretKeyRef:
              name: {{ $hb.existingSecret }}
              key: {{ $hb.secretKey }}
        {{- end }}
        {{- with .Values.dashboard.oidc }}
        {{- if .issuerURL }}
        # The client secret at the OpenID Connect provider.
        - name: VIGIL_OIDC_CLIENT_SECRET
          valueFrom:
            secretKeyRef:
              name: {{ required "dashboard.oidc.clientSecret.existingSecret names the Secret with the client secret" .clientSecret.existingSecret | quote }}
              key: {{ .clientSecret.key | quote }}
        {{- end }}
        {{- end }}
        {{- with .Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - name: http
          containerPort: 8000
          protocol: TCP
        - name: metrics
          containerPort: 8443
          protocol: TCP
        - name: probes
          containerPort: 8081
          protocol: TCP
        {{- if .Values.smtp.enabled }}
        - name: smtp
          containerPort: {{ .Values.smtp.port | int }}
          protocol: TCP
        {{- end }}
      {{- with .Values.securityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: probes
        initialDelaySeconds: 15
        periodSeconds: 20
      # Ready once the manager's cache has synced.
      readinessProbe:
        httpGet:
          path: /readyz
          port: probes
        initialDelaySeconds: 5
        periodSeconds: 10
      {{- if not $pg.existingSecret }}
      volumeMounts:
        - name: data
          mountPath: {{ include "vigil.storeDir" . }}
      {{- else if $pg.caSecret }}
      volumeMounts:
        - name: postgres-ca
          mountPath: {{ include "vigil.postgresCADir" . }}
          readOnly: true
      {{- end }}
      {{- with .Values.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if .Values.affinity }}
  affinity:
    {{- toYaml .Values.affinity | nindent 4 }}
  {{- else if $pg.existingSecret }}
  # Replicas on different nodes where the cluster has them, so that losing
  # a node leaves one serving (set affinity to replace this).
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector:
              matchLabels:
                {{- include "vigil.managerSelectorLabels" . | nindent 16 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- range . }}
    {{- $c := deepCopy . }}
    {{- if not $c.labelSelector }}
    {{- $_ := set $c "labelSelector" (dict "matchLabels" (include "vigil.managerSelectorLabels" $ | fromYaml)) }}
    {{- end }}
    - {{ toYaml $c | nindent 6 | trim }}
    {{- end }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if not $pg.existingSecret }}
  {{- if $store.existingClaim }}
  volumes:
    - name: data
      persistentVolumeClaim:
        claimName: {{ $store.existingClaim }}
  {{- end }}
  {{- else if $pg.caSecret }}
  volumes:
    # Only the certificate: CloudNativePG's <cluster>-ca Secret also holds
    # the CA's private key, which the manager has no use for.
    - name: postgres-ca
      secret:
        secretName: {{ $pg.caSecret | quote }}
        items:
          - key: ca.crt
            path: ca.crt
  {{- end }}
{{- end }}
