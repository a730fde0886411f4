-- Argo CD health check for monitoring.vigil.dev/Check.
--
-- Install it in argocd-cm (see docs/gitops.md):
--   resource.customizations.health.monitoring.vigil.dev_Check: |
--     <this file>
--
-- Ready means "Vigil reconciled this check and is monitoring it"; the
-- monitoring result is status.state. So: generation not yet observed ->
-- Progressing; a spec Vigil cannot use (Ready=False) -> Degraded; down ->
-- Degraded; paused -> Suspended; new, up and grace -> Healthy.

local hs = {}

local function condition(type_)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == type_ then
      return c
    end
  end
  return nil
end

if obj.status == nil or obj.status.observedGeneration == nil
    or obj.metadata.generation == nil
    or obj.status.observedGeneration < obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for Vigil to reconcile the latest spec"
  return hs
end

local ready = condition("Ready")
if ready ~= nil and ready.status == "False" then
  hs.status = "Degraded"
  hs.message = ready.message or ready.reason or "Check is not ready"
  return hs
end
if ready == nil or ready.status ~= "True" then
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition"
  return hs
end

local state = obj.status.state
if state == "down" then
  hs.status = "Degraded"
  local up = condition("Up")
  hs.message = (up ~= nil and up.message) or "Check is down"
elseif state == "paused" then
  hs.status = "Suspended"
  hs.message = "Monitoring is paused"
elseif state == "new" or state == "up" or state == "grace" then
  hs.status = "Healthy"
  hs.message = "Check is " .. state
else
  hs.status = "Progressing"
  hs.message = "Waiting for the first state"
end
return hs
