ALTER TABLE "deliveries" ADD COLUMN "run_id" text;
--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "step_id" text;
--> statement-breakpoint
CREATE INDEX "deliveries_run_idx" ON "deliveries" USING btree ("run_id");
--> statement-breakpoint
CREATE TABLE "scenario_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"scenario_id" text NOT NULL,
	"connection_id" text,
	"environment" text NOT NULL,
	"patient_id" text NOT NULL,
	"status" text NOT NULL,
	"pace" jsonb NOT NULL,
	"outcome" text,
	"seed" text,
	"plan" jsonb NOT NULL,
	"progress" jsonb NOT NULL,
	"simulated_start" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "scenario_runs" ADD CONSTRAINT "scenario_runs_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "scenario_runs" ADD CONSTRAINT "scenario_runs_connection_id_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."connections"("id") ON DELETE set null ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX "scenario_runs_organization_idx" ON "scenario_runs" USING btree ("organization_id","id");
--> statement-breakpoint
CREATE INDEX "scenario_runs_organization_status_idx" ON "scenario_runs" USING btree ("organization_id","status","id");
