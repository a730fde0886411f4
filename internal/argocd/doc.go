// Package argocd runs the Argo CD integration shipped in config/argocd, for
// tests: the health check Argo CD runs on Check objects, evaluated the way
// Argo CD evaluates it (gopher-lua, the Lua VM Argo CD embeds).
package argocd
