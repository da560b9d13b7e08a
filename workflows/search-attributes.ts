import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** The Keyword search attributes of CONVENTIONS.md, so runs can be found in the Web UI by them. */
export const OrgId = defineSearchAttributeKey('OrgId', SearchAttributeType.KEYWORD);
export const ConnectionId = defineSearchAttributeKey('ConnectionId', SearchAttributeType.KEYWORD);
export const EventType = defineSearchAttributeKey('EventType', SearchAttributeType.KEYWORD);
export const DeliveryStatus = defineSearchAttributeKey('DeliveryStatus', SearchAttributeType.KEYWORD);
export const ScenarioId = defineSearchAttributeKey('ScenarioId', SearchAttributeType.KEYWORD);

/** A prior authorization's Claim business identifier (`system|value`) and its current decision (claims/pas/vocabulary.ts). */
export const ClaimIdentifier = defineSearchAttributeKey('ClaimIdentifier', SearchAttributeType.KEYWORD);
export const PriorAuthDecision = defineSearchAttributeKey('PriorAuthDecision', SearchAttributeType.KEYWORD);

export const searchAttributeKeys = [OrgId, ConnectionId, EventType, DeliveryStatus, ScenarioId, ClaimIdentifier, PriorAuthDecision];
