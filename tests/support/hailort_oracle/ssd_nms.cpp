// HailoRT's SSD NMS post-process op (hailort: libhailort/src/net_flow/ops/ssd_post_process.cpp), the one a HEF
// compiled with an SSD nms_postprocess runs on the host, driven from the oracle tests
// (tests/backends/test_hailort_oracle.py). Built and linked as yolov8_nms.cpp is. One frame per request on stdin:
//
//   request: "CLASSES MAX_PER_CLASS SCORE_TH IOU_TH IMAGE_H IMAGE_W TYPE CENTERS_SCALE DIMS_SCALE TY TX TH TW
//             BACKGROUND NORMALIZE NLAYERS\n" (CLASSES: the class map's per anchor, background included;
//            BACKGROUND: its index, -1 for none), then per layer "NANCHORS W0 H0 W1 H1 ...\n" (fractions of the
//            input) and its regression head, then its class head, each
//            "H W C PH PW PC ZP SCALE MIN MAX NBYTES\n" + NBYTES bytes (the device frame, NHCW)
//   answer:  "STATUS NBYTES\n" + the HAILO_NMS_BY_CLASS float32 buffer, CLASSES classes long (the op writes a
//            count for the background class too; STATUS: hailo_status, 0 = success)
#include "net_flow/ops/ssd_post_process.hpp"
#include "driver_io.hpp"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

using namespace hailort;
using namespace hailort::net_flow;

int main()
{
    std::ios::sync_with_stdio(false);
    uint32_t classes, max_per_class, type, centers_scale, dims_scale, ty, tx, th, tw, normalize, nlayers;
    int background;
    double score_th, iou_th;
    float image_h, image_w;
    while (std::cin >> classes >> max_per_class >> score_th >> iou_th >> image_h >> image_w >> type >> centers_scale
           >> dims_scale >> ty >> tx >> th >> tw >> background >> normalize >> nlayers) {
        std::unordered_map<std::string, BufferMetaData> inputs_metadata;
        std::vector<std::vector<uint8_t>> frames(2 * nlayers);
        std::vector<std::string> names;
        SSDPostProcessConfig ssd_config{};
        ssd_config.image_height = image_h;
        ssd_config.image_width = image_w;
        ssd_config.centers_scale_factor = centers_scale;
        ssd_config.bbox_dimensions_scale_factor = dims_scale;
        ssd_config.ty_index = ty;
        ssd_config.tx_index = tx;
        ssd_config.th_index = th;
        ssd_config.tw_index = tw;
        ssd_config.normalize_boxes = (normalize != 0);
        for (uint32_t i = 0; i < nlayers; i++) {
            uint32_t nanchors;
            std::cin >> nanchors;
            std::vector<float32_t> anchors(2 * nanchors);
            for (auto &value : anchors) {
                std::cin >> value;
            }
            const auto layer = std::to_string(i);
            const std::string reg = "reg" + layer, cls = "cls" + layer;
            for (const auto &name : {reg, cls}) {
                inputs_metadata[name] = read_head(static_cast<hailo_format_type_t>(type), frames[names.size()]);
                names.push_back(name);
                ssd_config.anchors[name] = anchors;
            }
            ssd_config.reg_to_cls_inputs[reg] = cls;
        }
        BufferMetaData output{};
        output.format = hailo_format_t{HAILO_FORMAT_TYPE_FLOAT32, HAILO_FORMAT_ORDER_HAILO_NMS_BY_CLASS, HAILO_FORMAT_FLAGS_NONE};
        const NmsPostProcessConfig nms_config(score_th, iou_th, max_per_class, max_per_class * classes, classes,
            background >= 0, static_cast<uint32_t>(background >= 0 ? background : 0));
        std::vector<uint8_t> buffer(classes * (1 + 5 * max_per_class) * sizeof(float), 0);
        auto metadata = SSDOpMetadata::create(inputs_metadata, {{"nms", output}}, nms_config, ssd_config, "net");
        hailo_status status = metadata.status();
        if (HAILO_SUCCESS == status) {
            auto op = SSDPostProcessOp::create(std::static_pointer_cast<SSDOpMetadata>(metadata.value()));
            status = op.status();
            if (HAILO_SUCCESS == status) {
                std::map<std::string, MemoryView> inputs, outputs{{"nms", MemoryView(buffer.data(), buffer.size())}};
                for (size_t k = 0; k < names.size(); k++) {
                    inputs[names[k]] = MemoryView(frames[k].data(), frames[k].size());
                }
                status = op.value()->execute(inputs, outputs);
            }
        }
        write_answer(status, buffer);
    }
    return 0;
}
