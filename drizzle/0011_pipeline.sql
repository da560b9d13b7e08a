-- An attempt records its intent (outcome `sending`) before it sends, and its duration once answered.
ALTER TABLE "delivery_attempts" ALTER COLUMN "duration_ms" DROP NOT NULL;
