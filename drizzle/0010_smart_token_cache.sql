CREATE FUNCTION "notify_row_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	-- One function for every per-process cache (platform/notified-cache.ts): the channel is the trigger's argument.
	PERFORM pg_notify(TG_ARGV[0], OLD.id);
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "smart_tokens_changed" AFTER UPDATE OR DELETE ON "smart_tokens" FOR EACH ROW EXECUTE FUNCTION "notify_row_changed"('smart_token_changed');
--> statement-breakpoint
CREATE TRIGGER "smart_authorizations_changed" AFTER UPDATE OR DELETE ON "smart_authorizations" FOR EACH ROW EXECUTE FUNCTION "notify_row_changed"('smart_token_changed');
--> statement-breakpoint
DROP TRIGGER "api_keys_changed" ON "api_keys";
--> statement-breakpoint
CREATE TRIGGER "api_keys_changed" AFTER UPDATE OR DELETE ON "api_keys" FOR EACH ROW EXECUTE FUNCTION "notify_row_changed"('api_key_changed');
--> statement-breakpoint
DROP FUNCTION "notify_api_key_changed"();
